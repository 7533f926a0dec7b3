package image

import (
	"reflect"
	"testing"
)

func TestSearchNames(t *testing.T) {
	s := &Store{}
	if got := s.searchNamesLocked("fedora"); !reflect.DeepEqual(got, []string{"fedora"}) {
		t.Errorf("no search list: %v", got)
	}
	s.SetSearchList([]string{"a.example", "docker.io", "b.example:5000"})
	for ref, want := range map[string][]string{
		"fedora":                   {"a.example/fedora", "fedora", "b.example:5000/fedora"},
		"docker.io/library/fedora": {"a.example/fedora", "docker.io/library/fedora", "b.example:5000/fedora"},
		"user/app:v1":              {"a.example/user/app:v1", "user/app:v1", "b.example:5000/user/app:v1"},
		"quay.example/x":           {"quay.example/x"},
		"localhost:5000/x":         {"localhost:5000/x"},
	} {
		if got := s.searchNamesLocked(ref); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", ref, got, want)
		}
	}
}
