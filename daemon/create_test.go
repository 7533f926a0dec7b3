package daemon

import (
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

// A daemon with one container, "/other", for checks that look others up.
func daemonWithOther(t *testing.T) *Daemon {
	t.Helper()
	store, err := container.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Add(container.New(store.Root(), "0123456789ab0123456789ab0123456789ab0123456789ab0123456789abcdef", "/other")); err != nil {
		t.Fatal(err)
	}
	return &Daemon{containers: store}
}

func TestValidateLinks(t *testing.T) {
	d := daemonWithOther(t)
	for _, tc := range []struct {
		links []string
		class errdefs.Class
		msg   string
	}{
		{nil, errdefs.ClassUnknown, ""},
		{[]string{"no-such-container"}, errdefs.ClassInvalidParameter, "could not get container for no-such-container: No such container: no-such-container"},
		{[]string{"nosuch:alias"}, errdefs.ClassInvalidParameter, "could not get container for nosuch: No such container: nosuch"},
		{[]string{"/nosuch:/me/alias"}, errdefs.ClassInvalidParameter, "could not get container for nosuch: No such container: nosuch"},
		{[]string{""}, errdefs.ClassInvalidParameter, "empty string specified for links"},
		{[]string{"a:b:c"}, errdefs.ClassInvalidParameter, "bad format for links: a:b:c"},
		{[]string{"other:alias"}, errdefs.ClassNotImplemented, "links are not implemented by this engine yet"},
	} {
		err := d.validateLinks(tc.links)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.links, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.msg || errdefs.ClassOf(err) != tc.class {
			t.Errorf("%q: got %v (%v); want %v %q", tc.links, err, errdefs.ClassOf(err), tc.class, tc.msg)
		}
	}
}

func TestValidatePidMode(t *testing.T) {
	d := daemonWithOther(t)
	for _, tc := range []struct {
		mode  containertypes.PidMode
		class errdefs.Class
		msg   string
	}{
		{"", errdefs.ClassUnknown, ""},
		{"host", errdefs.ClassUnknown, ""},
		{"invalid", errdefs.ClassInvalidParameter, "invalid PID mode: invalid"},
		{"container", errdefs.ClassInvalidParameter, "invalid PID mode: container"},
		{"container:", errdefs.ClassInvalidParameter, "invalid PID mode: container:"},
		{"container:nosuchcontainer", errdefs.ClassInvalidParameter, "No such container: nosuchcontainer"},
		{"container:other", errdefs.ClassNotImplemented, `PID mode "container:other" is not implemented by this engine yet`},
	} {
		err := d.validatePidMode(tc.mode)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.mode, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.msg || errdefs.ClassOf(err) != tc.class {
			t.Errorf("%q: got %v (%v); want %v %q", tc.mode, err, errdefs.ClassOf(err), tc.class, tc.msg)
		}
	}
}
