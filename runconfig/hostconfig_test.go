package runconfig

import (
	"testing"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/pkg/errdefs"
)

func TestValidateNamespaceModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		hc   containertypes.HostConfig
		want string // "" = valid
	}{
		{"defaults", containertypes.HostConfig{}, ""},
		{"ipc private", containertypes.HostConfig{IpcMode: "private"}, ""},
		{"ipc shareable", containertypes.HostConfig{IpcMode: "shareable"}, ""},
		{"ipc none", containertypes.HostConfig{IpcMode: "none"}, ""},
		{"ipc host", containertypes.HostConfig{IpcMode: "host"}, ""},
		{"ipc container", containertypes.HostConfig{IpcMode: "container:x"}, ""},
		{"uts host", containertypes.HostConfig{UTSMode: "host"}, ""},
		{"ipc invalid", containertypes.HostConfig{IpcMode: "invalid"}, "invalid IPC mode: invalid"},
		{"uts invalid", containertypes.HostConfig{UTSMode: "invalid"}, "invalid UTS mode: invalid"},
		{"uts private is not a UTS mode", containertypes.HostConfig{UTSMode: "private"}, "invalid UTS mode: private"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateNamespaceModes(&tc.hc)
			checkErr(t, err, tc.want)
		})
	}
}

func TestValidateAnnotations(t *testing.T) {
	checkErr(t, ValidateAnnotations(nil), "")
	checkErr(t, ValidateAnnotations(map[string]string{"foo": "bar", "io.kubernetes.docker.type": ""}), "")
	checkErr(t, ValidateAnnotations(map[string]string{"": "a"}),
		"invalid Annotations: the empty string is not permitted as an annotation key")
}

// checkErr wants err to be nil when want is "", else a 400 saying want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want == "":
	case err == nil:
		t.Errorf("no error, want %q", want)
	case err.Error() != want || !errdefs.IsInvalidParameter(err):
		t.Errorf("error %q (400: %v), want 400 %q", err, errdefs.IsInvalidParameter(err), want)
	}
}
