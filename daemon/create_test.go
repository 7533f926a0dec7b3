package daemon

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sdengine/engine/daemon/config"

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
		mode  containertypes.NetworkMode
		class errdefs.Class
		msg   string
	}{
		{nil, "", errdefs.ClassUnknown, ""},
		{[]string{"other:alias"}, "default", errdefs.ClassUnknown, ""},
		{[]string{"/other:/me/alias"}, "bridge", errdefs.ClassUnknown, ""},
		// On a user-defined network Docker keeps no link (its DNS names).
		{[]string{"nosuch:alias"}, "mynet", errdefs.ClassUnknown, ""},
		{[]string{"no-such-container"}, "", errdefs.ClassInvalidParameter, "could not get container for no-such-container: No such container: no-such-container"},
		{[]string{"nosuch:alias"}, "", errdefs.ClassInvalidParameter, "could not get container for nosuch: No such container: nosuch"},
		{[]string{"/nosuch:/me/alias"}, "", errdefs.ClassInvalidParameter, "could not get container for nosuch: No such container: nosuch"},
		{[]string{""}, "", errdefs.ClassInvalidParameter, "empty string specified for links"},
		{[]string{"a:b:c"}, "", errdefs.ClassInvalidParameter, "bad format for links: a:b:c"},
		{[]string{"other"}, "host", errdefs.ClassInvalidParameter, "conflicting options: host type networking can't be used with links. This would result in undefined behavior"},
		{[]string{"other"}, "container:other", errdefs.ClassInvalidParameter, "conflicting options: container type network can't be used with links. This would result in undefined behavior"},
	} {
		err := d.validateLinks(&containertypes.HostConfig{Links: tc.links, NetworkMode: tc.mode})
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
	d := &Daemon{cfg: &config.Config{Root: root}}
	for _, tc := range []struct {
		bind string
		want mount.Propagation // "" if refused
	}{
		{"/var/lib/docker:/foo", "rslave"},
		{"/var/lib/docker/containers:/foo", "rslave"},
		{"/var/lib:/foo", "rslave"},
		{"/:/foo", "rslave"},
		{"/var/lib/docker:/foo:rslave", "rslave"},
		{"/var/lib/docker/x:/foo:ro,rshared", "rshared"},
		{"/var/lib/docker:/foo:private", ""},
		{"/var/lib/docker:/foo:rprivate", ""},
		{"/var/lib/docker/containers:/foo:slave", ""},
		{"/var/lib/docker:/foo:shared", ""},
		{"/var/lib/docker2:/foo:private", "private"},
		{"/srv:/foo:shared", "shared"},
		{"/srv:/foo", "rprivate"},
	} {
		mp, err := parseBindSpec(tc.bind, false)
		if err != nil {
			t.Fatal(err)
		}
		err = d.checkBindSource(mp)
		if tc.want == "" {
			if err == nil || !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), `invalid mount config: must use either propagation mode "rslave" or "rshared" when mount source is within the daemon root, daemon root: "/var/lib/docker"`) {
				t.Errorf("%s: got %v; want Docker's refusal", tc.bind, err)
			}
			continue
		}
		if err != nil || mp.Propagation != tc.want {
			t.Errorf("%s: %v %q, want %q", tc.bind, err, mp.Propagation, tc.want)
		}
	}
}

func TestParseBindSpec(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want container.MountPoint
		err  string
	}{
		{spec: "/h:/c", want: container.MountPoint{Type: "bind", Source: "/h", Destination: "/c", RW: true, Propagation: "rprivate"}},
		{spec: "/h:/c:ro", want: container.MountPoint{Type: "bind", Source: "/h", Destination: "/c", Mode: "ro", Propagation: "rprivate"}},
		{spec: "data:/c", want: container.MountPoint{Type: "volume", Name: "data", Destination: "/c", Driver: "local", Mode: "z", RW: true, CopyData: true}},
		{spec: "data:/c:ro,nocopy", want: container.MountPoint{Type: "volume", Name: "data", Destination: "/c", Driver: "local", Mode: "ro,nocopy"}},
		{spec: "a/b:/c", err: "invalid characters"},
		{spec: "/h:rel", err: "must be absolute"},
		{spec: "/h:/", err: "destination can't be '/'"},
		{spec: "/h:/c:bogus", err: "invalid mode: bogus"},
		{spec: "/h:/c:nocopy", err: "invalid mode"},
	} {
		mp, err := parseBindSpec(tc.spec, false)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errdefs.IsInvalidParameter(err) {
				t.Errorf("%s: %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(*mp, tc.want) {
			t.Errorf("%s: %+v %v, want %+v", tc.spec, mp, err, tc.want)
		}
	}
}

func TestParseMountSpec(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		m     mount.Mount
		check func(*container.MountPoint) bool
		err   string
	}{
		{m: mount.Mount{Type: "bind", Source: dir, Target: "/c", ReadOnly: true, BindOptions: &mount.BindOptions{ReadOnlyNonRecursive: true, Propagation: "rslave"}},
			check: func(mp *container.MountPoint) bool {
				return !mp.RW && mp.ReadOnlyNonRecursive && mp.Propagation == "rslave" && mp.Mode == ""
			}},
		{m: mount.Mount{Type: "bind", Source: dir, Target: "/c", BindOptions: &mount.BindOptions{NonRecursive: true}},
			check: func(mp *container.MountPoint) bool { return mp.NonRecursive && mp.RW }},
		{m: mount.Mount{Type: "bind", Source: dir + "/missing", Target: "/c"}, err: "bind source path does not exist"},
		{m: mount.Mount{Type: "bind", Target: "/c"}, err: "field Source must not be empty"},
		{m: mount.Mount{Type: "bind", Source: dir, Target: "/c", BindOptions: &mount.BindOptions{ReadOnlyForceRecursive: true}}, err: "must set ReadOnly"},
		{m: mount.Mount{Type: "volume", Target: "/c"},
			check: func(mp *container.MountPoint) bool {
				return mp.Name == "" && mp.CopyData && mp.Mode == "z" && mp.Driver == "local"
			}},
		{m: mount.Mount{Type: "volume", Source: "v1", Target: "/c", VolumeOptions: &mount.VolumeOptions{NoCopy: true, Subpath: "a/b"}},
			check: func(mp *container.MountPoint) bool { return mp.Name == "v1" && !mp.CopyData && mp.Subpath == "a/b" }},
		{m: mount.Mount{Type: "volume", Source: "v1", Target: "/c", VolumeOptions: &mount.VolumeOptions{Subpath: "../../etc"}}, err: "subpath must be a relative path within the volume"},
		{m: mount.Mount{Type: "volume", Target: "/c", BindOptions: &mount.BindOptions{}}, err: "field BindOptions must not be specified"},
		{m: mount.Mount{Type: "volume", Target: "/c", VolumeOptions: &mount.VolumeOptions{DriverConfig: &mount.Driver{Name: "nope"}}}, err: `plugin "nope" not found`},
		{m: mount.Mount{Type: "tmpfs", Target: "/t", TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 1 << 20, Mode: 0o700}},
			check: func(mp *container.MountPoint) bool { return mp.TmpfsSize == 1<<20 && mp.TmpfsMode == 0o700 }},
		{m: mount.Mount{Type: "tmpfs", Source: "x", Target: "/t"}, err: "field Source must not be specified"},
		{m: mount.Mount{Type: "bogus", Target: "/t"}, err: "mount type unknown"},
		{m: mount.Mount{Type: "tmpfs"}, err: "field Target must not be empty"},
		// Image mounts are read-only whatever is asked.
		{m: mount.Mount{Type: "image", Source: "busybox", Target: "/m/", ReadOnly: false, ImageOptions: &mount.ImageOptions{Subpath: "etc/"}},
			check: func(mp *container.MountPoint) bool {
				return !mp.RW && mp.Source == "busybox" && mp.Destination == "/m" && mp.Subpath == "etc" && mp.Propagation == "rprivate"
			}},
		{m: mount.Mount{Type: "image", Source: "busybox", Target: "/m", ImageOptions: &mount.ImageOptions{Subpath: "./"}},
			check: func(mp *container.MountPoint) bool { return mp.Subpath == "" }},
		{m: mount.Mount{Type: "image", Target: "/m"}, err: "field Source must not be empty"},
		{m: mount.Mount{Type: "image", Source: "busybox", Target: "m"}, err: "must be absolute"},
		{m: mount.Mount{Type: "image", Source: "busybox", Target: "/m", ImageOptions: &mount.ImageOptions{Subpath: "/etc"}}, err: "relative"},
		{m: mount.Mount{Type: "image", Source: "busybox", Target: "/m", ImageOptions: &mount.ImageOptions{Subpath: "a/../../etc"}}, err: "'..'"},
		{m: mount.Mount{Type: "image", Source: "busybox", Target: "/m", ImageOptions: &mount.ImageOptions{Subpath: "a/.."}}, err: "'..'"},
		{m: mount.Mount{Type: "image", Source: "busybox", Target: "/m", VolumeOptions: &mount.VolumeOptions{}}, err: "field VolumeOptions must not be specified"},
	} {
		mp, err := parseMountSpec(tc.m, false)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: %v, want %q", tc.m, err, tc.err)
			}
			continue
		}
		if err != nil || !tc.check(mp) {
			t.Errorf("%+v: %+v %v", tc.m, mp, err)
		}
	}
	// Before API 1.44, read-only binds are not recursive.
	mp, err := parseMountSpec(mount.Mount{Type: "bind", Source: dir, Target: "/c", ReadOnly: true}, true)
	if err != nil || !mp.ReadOnlyNonRecursive {
		t.Errorf("old API: %+v %v", mp, err)
	}
	m, err := bindSpecMount(mp)
	if err != nil || slices.Contains(m.Options, "rro") {
		t.Errorf("non-recursive read-only spec: %v %v", m.Options, err)
	}
}
