package daemon

import (
	"maps"
	"time"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/events"
)

// SubscribeEvents is GET /events.
func (d *Daemon) SubscribeEvents(since, until time.Time, f filters.Args) ([]eventtypes.Message, <-chan eventtypes.Message, func()) {
	past, sub := d.events.Subscribe(since, until, events.Filter{Args: f})
	return past, sub.C(), func() { d.events.Cancel(sub) }
}

// Events is the daemon's event log, for the parts of the engine that
// publish to it (images, networks, volumes): one call per event.
func (d *Daemon) Events() events.Publisher { return d.events }

// containerEvent logs a container event with Docker's attributes: the
// image as the user named it, the name, the labels, and extra.
func (d *Daemon) containerEvent(c *container.Container, action eventtypes.Action, extra map[string]string) {
	attrs := map[string]string{}
	if c.Config != nil {
		maps.Copy(attrs, c.Config.Labels)
		attrs["image"] = c.Config.Image
	}
	attrs["name"] = trimSlash(c.Name)
	maps.Copy(attrs, extra)
	d.events.Log(action, eventtypes.ContainerEventType, eventtypes.Actor{ID: c.ID, Attributes: attrs})
}

// volumeEvent logs a volume event with Docker's attribute (the driver:
// local, the only one).
func (d *Daemon) volumeEvent(name string, action eventtypes.Action) {
	d.events.Log(action, eventtypes.VolumeEventType, eventtypes.Actor{ID: name, Attributes: map[string]string{"driver": "local"}})
}

func trimSlash(name string) string {
	if len(name) > 0 && name[0] == '/' {
		return name[1:]
	}
	return name
}
