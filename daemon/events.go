package daemon

import (
	"maps"
	"time"

	"github.com/distribution/reference"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/events"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/pkg/errdefs"
)

// SubscribeEvents is GET /events.
func (d *Daemon) SubscribeEvents(since, until time.Time, f filters.Args) ([]eventtypes.Message, <-chan eventtypes.Message, func(), error) {
	if err := f.Validate(events.AcceptedFilters); err != nil {
		return nil, nil, nil, errdefs.InvalidParameter(err)
	}
	past, sub := d.events.Subscribe(since, until, events.Filter{Args: f})
	return past, sub.C(), func() { d.events.Cancel(sub) }, nil
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

// imageEvent logs an image event the image store reports (tag, untag,
// delete, import, load, save, create).
func (d *Daemon) imageEvent(action eventtypes.Action, id string, attrs map[string]string) {
	d.events.Log(action, eventtypes.ImageEventType, eventtypes.Actor{ID: id, Attributes: attrs})
}

// refEvent logs a pull or push as Docker does: the actor is the reference
// ("busybox:latest"), its name the repository ("busybox"), with the
// image's labels when the reference names a local image.
func (d *Daemon) refEvent(action eventtypes.Action, ref reference.Named) {
	attrs := map[string]string{}
	if img, err := d.images.Get(reference.FamiliarString(ref)); err == nil {
		maps.Copy(attrs, img.Config.Config.Labels)
	}
	attrs["name"] = reference.FamiliarName(ref)
	d.events.Log(action, eventtypes.ImageEventType, eventtypes.Actor{ID: reference.FamiliarString(ref), Attributes: attrs})
}

// networkEvent logs a network event with Docker's attributes: the
// network's name and driver ("type"; bridge, the only driver here), and
// extra (the container of a connect or disconnect). id "" is the default
// bridge.
func (d *Daemon) networkEvent(id, name string, action eventtypes.Action, extra map[string]string) {
	if id == "" {
		id = libnetwork.NetworkID(name)
	}
	attrs := map[string]string{"name": name, "type": "bridge"}
	maps.Copy(attrs, extra)
	d.events.Log(action, eventtypes.NetworkEventType, eventtypes.Actor{ID: id, Attributes: attrs})
}

func trimSlash(name string) string {
	if len(name) > 0 && name[0] == '/' {
		return name[1:]
	}
	return name
}
