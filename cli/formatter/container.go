package formatter

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	units "github.com/docker/go-units"
)

// Default formats of "docker ps".
const (
	ContainerTableFormat = "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}"
	ContainerQuietFormat = "{{.ID}}"
)

// ContainerHeaders are docker's column titles for container fields.
var ContainerHeaders = Headers{
	"ID": "CONTAINER ID", "Image": "IMAGE", "Command": "COMMAND",
	"CreatedAt": "CREATED AT", "RunningFor": "CREATED", "Ports": "PORTS",
	"State": "STATE", "Status": "STATUS", "Size": "SIZE", "Names": "NAMES",
	"Labels": "LABELS", "Mounts": "MOUNTS", "Networks": "NETWORKS",
	"LocalVolumes": "LOCAL VOLUMES",
}

// Container is one "docker ps" row; its methods are the template fields.
type Container struct {
	C     container.Summary
	Trunc bool
	Now   time.Time // for CREATED; zero means time.Now()
}

// ID is the container ID, 12 characters unless --no-trunc.
func (c Container) ID() string {
	if c.Trunc {
		return TruncateID(c.C.ID)
	}
	return c.C.ID
}

// Image is the image the container was created from; a bare image ID is
// shortened like other IDs.
func (c Container) Image() string {
	img := c.C.Image
	if img == "" {
		return "<no image>"
	}
	if c.Trunc {
		if strings.HasPrefix(img, "sha256:") || isHexID(img) {
			return TruncateID(img)
		}
	}
	return img
}

// Command is the quoted command line, cut to 20 characters unless --no-trunc.
func (c Container) Command() string {
	cmd := c.C.Command
	if c.Trunc {
		cmd = Ellipsis(cmd, 20)
	}
	return strconv.Quote(cmd)
}

// CreatedAt is the creation time in Go's default time format, like docker.
func (c Container) CreatedAt() string { return time.Unix(c.C.Created, 0).String() }

// RunningFor is the human age shown in the CREATED column.
func (c Container) RunningFor() string {
	return units.HumanDuration(c.now().Sub(time.Unix(c.C.Created, 0))) + " ago"
}

func (c Container) now() time.Time {
	if c.Now.IsZero() {
		return time.Now()
	}
	return c.Now
}

// Ports lists published and exposed ports.
func (c Container) Ports() string { return DisplayablePorts(c.C.Ports) }

// State is the machine state ("running", "exited", ...).
func (c Container) State() string { return c.C.State }

// Status is the daemon's human status ("Up 5 seconds", "Exited (0) ...").
func (c Container) Status() string { return c.C.Status }

// Size is the writable layer size, when the daemon computed it.
func (c Container) Size() string {
	if c.C.SizeRw == 0 && c.C.SizeRootFs == 0 {
		return "0B"
	}
	return fmt.Sprintf("%s (virtual %s)", units.HumanSizeWithPrecision(float64(c.C.SizeRw), 3),
		units.HumanSizeWithPrecision(float64(c.C.SizeRootFs), 3))
}

// Names are the container's names without the leading "/"; link aliases
// (names with a further "/") are hidden unless --no-trunc.
func (c Container) Names() string {
	var names []string
	for _, n := range c.C.Names {
		n = strings.TrimPrefix(n, "/")
		if c.Trunc && strings.Contains(n, "/") {
			continue
		}
		names = append(names, n)
	}
	return strings.Join(names, ",")
}

// Labels is "k=v,..." sorted by key.
func (c Container) Labels() string {
	keys := make([]string, 0, len(c.C.Labels))
	for k := range c.C.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+c.C.Labels[k])
	}
	return strings.Join(parts, ",")
}

// Label is one label's value.
func (c Container) Label(name string) string { return c.C.Labels[name] }

// Mounts lists mount names or destinations.
func (c Container) Mounts() string {
	var m []string
	for _, mp := range c.C.Mounts {
		name := mp.Name
		if name == "" {
			name = mp.Source
		}
		if c.Trunc {
			name = Ellipsis(name, 15)
		}
		m = append(m, name)
	}
	return strings.Join(m, ",")
}

// Networks lists the attached network names.
func (c Container) Networks() string {
	if c.C.NetworkSettings == nil {
		return ""
	}
	var n []string
	for name := range c.C.NetworkSettings.Networks {
		n = append(n, name)
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

// LocalVolumes counts the local-driver volumes mounted.
func (c Container) LocalVolumes() string {
	n := 0
	for _, m := range c.C.Mounts {
		if m.Driver == "local" {
			n++
		}
	}
	return strconv.Itoa(n)
}

// MarshalJSON makes {{json .}} print every column, as docker does.
func (c Container) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{
		"ID": c.ID(), "Image": c.Image(), "Command": c.Command(), "CreatedAt": c.CreatedAt(),
		"RunningFor": c.RunningFor(), "Ports": c.Ports(), "State": c.State(), "Status": c.Status(),
		"Size": c.Size(), "Names": c.Names(), "Labels": c.Labels(), "Mounts": c.Mounts(),
		"Networks": c.Networks(), "LocalVolumes": c.LocalVolumes(),
	})
}

// DisplayablePorts renders ports as docker does for single ports:
// "0.0.0.0:8080->80/tcp" when published, "80/tcp" when only exposed.
func DisplayablePorts(ports []container.Port) string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ports {
		var s string
		if p.PublicPort != 0 {
			ip := p.IP
			if strings.Contains(ip, ":") {
				ip = "[" + ip + "]"
			}
			s = fmt.Sprintf("%s:%d->%d/%s", ip, p.PublicPort, p.PrivatePort, p.Type)
		} else {
			s = fmt.Sprintf("%d/%s", p.PrivatePort, p.Type)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// TruncateID shortens an ID (optionally "sha256:"-prefixed) to 12 hex chars.
func TruncateID(id string) string {
	if _, after, ok := strings.Cut(id, ":"); ok {
		id = after
	}
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
