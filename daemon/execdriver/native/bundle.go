package native

import (
	"path/filepath"

	"github.com/sdengine/engine/daemon/execdriver/shimproto"
)

// BundleConfig is the path of container id's OCI config.json, as Create
// writes it (hooks get it as their CONFIG_PATH).
func (d *Driver) BundleConfig(id string) string {
	return filepath.Join(d.stateDir(id), shimproto.SpecFile)
}
