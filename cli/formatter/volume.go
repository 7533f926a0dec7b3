package formatter

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/volume"
	"github.com/docker/go-units"
)

// Default formats of "docker volume ls".
const (
	VolumeTableFormat = "table {{.Driver}}\t{{.Name}}"
	VolumeQuietFormat = "{{.Name}}"
)

// VolumeHeaders are docker's column titles for volume fields.
var VolumeHeaders = Headers{
	"Name": "VOLUME NAME", "Driver": "DRIVER", "Scope": "SCOPE", "Mountpoint": "MOUNTPOINT",
	"Labels": "LABELS", "Links": "LINKS", "Size": "SIZE", "Availability": "AVAILABILITY", "Group": "GROUP",
}

// Volume is one "docker volume ls" row.
type Volume struct{ V *volume.Volume }

func (v Volume) Name() string       { return v.V.Name }
func (v Volume) Driver() string     { return v.V.Driver }
func (v Volume) Scope() string      { return v.V.Scope }
func (v Volume) Mountpoint() string { return v.V.Mountpoint }

// Labels is "k=v,k2=v2", sorted.
func (v Volume) Labels() string {
	var kv []string
	for k, val := range v.V.Labels {
		kv = append(kv, k+"="+val)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// Label is one label's value.
func (v Volume) Label(name string) string { return v.V.Labels[name] }

// Links is the number of containers using the volume, when known.
func (v Volume) Links() string {
	if v.V.UsageData == nil {
		return "N/A"
	}
	return strconv.FormatInt(v.V.UsageData.RefCount, 10)
}

// Size is the volume's size, when known.
func (v Volume) Size() string {
	if v.V.UsageData == nil || v.V.UsageData.Size < 0 {
		return "N/A"
	}
	return units.HumanSizeWithPrecision(float64(v.V.UsageData.Size), 3)
}

// MarshalJSON is the row as {{json .}} prints it.
func (v Volume) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{
		"Name": v.Name(), "Driver": v.Driver(), "Scope": v.Scope(), "Mountpoint": v.Mountpoint(),
		"Labels": v.Labels(), "Links": v.Links(), "Size": v.Size(), "Availability": "N/A", "Group": "N/A",
	})
}
