package daemon

import (
	"slices"
	"strings"
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
		{"container:other", errdefs.ClassUnknown, ""}, // stopped or not: the start decides
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

func TestBindDataRoot(t *testing.T) {
	const root = "/var/lib/docker"
	for _, tc := range []struct {
		bind string
		opts []string // the options after the bind's own, or nil if refused
	}{
		{"/var/lib/docker:/foo", []string{"rslave"}},
		{"/var/lib/docker/containers:/foo", []string{"rslave"}},
		{"/var/lib:/foo", []string{"rslave"}},
		{"/:/foo", []string{"rslave"}},
		{"/var/lib/docker:/foo:rslave", []string{"rslave"}},
		{"/var/lib/docker/x:/foo:ro,rshared", roOpts("rshared")},
		{"/var/lib/docker:/foo:private", nil},
		{"/var/lib/docker:/foo:rprivate", nil},
		{"/var/lib/docker/containers:/foo:slave", nil},
		{"/var/lib/docker:/foo:shared", nil},
		{"/var/lib/docker2:/foo:private", []string{"private"}},
		{"/srv:/foo:shared", []string{"shared"}},
	} {
		m, err := parseBind(tc.bind)
		if err != nil {
			t.Fatal(err)
		}
		n := len(m.Options)
		err = bindDataRoot(&m, root)
		if tc.opts == nil {
			if err == nil || !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), `invalid mount config: must use either propagation mode "rslave" or "rshared" when mount source is within the daemon root, daemon root: "/var/lib/docker"`) {
				t.Errorf("%s: got %v; want Docker's refusal", tc.bind, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.bind, err)
			continue
		}
		if got := m.Options[1:]; !slices.Equal(got, tc.opts) {
			t.Errorf("%s: options %q (had %d); want rbind then %q", tc.bind, m.Options, n, tc.opts)
		}
	}
}

// roOpts is what a ":ro" bind's options are after "rbind", then more.
func roOpts(more ...string) []string {
	o := []string{"ro"}
	if recursiveReadOnly() {
		o = append(o, "rro")
	}
	return append(o, more...)
}
