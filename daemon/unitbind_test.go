package daemon

import (
	"strings"
	"testing"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/unitbind"
)

func TestValidateUnitBind(t *testing.T) {
	sd := &Daemon{cgroupDriver: cgroupDriverSystemd}
	fs := &Daemon{cgroupDriver: cgroupDriverCgroupfs}
	for _, d := range []*Daemon{sd, fs} {
		for _, labels := range []map[string]string{nil, {unitbind.BindToLabel: ""}} {
			if w, err := d.validateUnitBind(labels); err != nil || len(w) != 0 {
				t.Errorf("%s, %v: %v %v", d.cgroupDriver, labels, w, err)
			}
		}
		// A bad name is a 400 with either driver: it is never valid.
		for _, bad := range []string{"web", "foo@.service", "a/b.service"} {
			_, err := d.validateUnitBind(map[string]string{unitbind.BindToLabel: bad})
			if !errdefs.IsInvalidParameter(err) || !strings.Contains(err.Error(), unitbind.BindToLabel) {
				t.Errorf("%s, %q: %v", d.cgroupDriver, bad, err)
			}
		}
	}
	good := map[string]string{unitbind.BindToLabel: "docker-container@web.service"}
	if w, err := sd.validateUnitBind(good); err != nil || len(w) != 0 {
		t.Errorf("systemd driver: %v %v", w, err)
	}
	// cgroupfs: created, with a warning that names the driver.
	w, err := fs.validateUnitBind(good)
	if err != nil || len(w) != 1 || !strings.Contains(w[0], "systemd cgroup driver") {
		t.Errorf("cgroupfs driver: %v %v", w, err)
	}
}
