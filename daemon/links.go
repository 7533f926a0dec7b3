package daemon

import (
	"fmt"
	"sort"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/libnetwork"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Legacy links (--link NAME[:ALIAS]) on the default bridge, as Docker
// has them: the record keeps alias → the linked container's ID
// (Container.Links), so that renaming either side keeps the link; the
// link is a name of the linked container ("/PARENT/ALIAS", the store's
// linkedLocked); at each start the daemon reads the linked containers'
// records (joinLinks) and libnetwork's Join checks they run on the
// default bridge and computes what the links give (environment, hosts).
// On a user-defined network Docker registers no link (its links are
// names of its embedded DNS instead): nothing is checked or kept here.

// Docker's messages (runconfig's) for links with a shared network.
var (
	errHostNetworkAndLinks      = errdefs.InvalidParameter(fmt.Errorf("conflicting options: host type networking can't be used with links. This would result in undefined behavior"))
	errContainerNetworkAndLinks = errdefs.InvalidParameter(fmt.Errorf("conflicting options: container type network can't be used with links. This would result in undefined behavior"))
)

// validateLinks refuses at create the links Docker refuses: malformed,
// naming a missing container (400, not 404: a 404 would make the client
// say the image is missing), with the host or a container's network, or
// to a container on the host's network.
func (d *Daemon) validateLinks(hc *containertypes.HostConfig) error {
	_, err := d.resolveLinks(hc)
	return err
}

// resolveLinks is the links' record: alias → linked container's ID.
func (d *Daemon) resolveLinks(hc *containertypes.HostConfig) (map[string]string, error) {
	if len(hc.Links) == 0 || libnetwork.IsUserMode(string(hc.NetworkMode)) {
		return nil, nil
	}
	switch {
	case hc.NetworkMode.IsHost():
		return nil, errHostNetworkAndLinks
	case hc.NetworkMode.IsContainer():
		return nil, errContainerNetworkAndLinks
	}
	out := map[string]string{}
	for _, l := range hc.Links {
		name, alias, err := libnetwork.ParseLink(l)
		if err != nil {
			return nil, errdefs.InvalidParameter(err)
		}
		child, err := d.containers.Get(name)
		if err != nil {
			if errdefs.IsNotFound(err) {
				return nil, errdefs.InvalidParameter(fmt.Errorf("could not get container for %s: %w", name, err))
			}
			return nil, fmt.Errorf("could not get container for %s: %w", name, err)
		}
		child.Lock()
		host := child.HostConfig != nil && child.HostConfig.NetworkMode.IsHost()
		child.Unlock()
		if host {
			return nil, errHostNetworkAndLinks
		}
		out[alias] = child.ID
	}
	return out, nil
}

// peekLinked reads the linked container's record under its lock, only
// trying it (the caller holds its own container's lock; see peek).
func peekLinked(self, other *container.Container, alias string) (libnetwork.LinkedContainer, error) {
	if other == self {
		return libnetwork.LinkedContainer{}, errdefs.InvalidParameter(fmt.Errorf("container %s cannot link to itself", self.ID))
	}
	deadline := time.Now().Add(lockWait)
	for !other.TryLock() {
		if time.Now().After(deadline) {
			return libnetwork.LinkedContainer{}, errdefs.Conflict(fmt.Errorf("container %s is busy (being started, stopped or removed); try again", other.ID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer other.Unlock()
	st := libnetwork.LinkedContainer{
		Alias:    alias,
		ID:       other.ID,
		Name:     other.Name,
		Hostname: other.Hostname(),
		Running:  other.State.Running(),
		Env:      append([]string(nil), other.Config.Env...),
	}
	for p := range other.Config.ExposedPorts {
		st.Ports = append(st.Ports, p)
	}
	return st, nil
}

// joinLinks are c's legacy links as Join wants them, in the order of
// their aliases. A linked container that is gone is skipped, as in
// Docker. The caller holds c's lock.
func (d *Daemon) joinLinks(c *container.Container) ([]libnetwork.LinkedContainer, error) {
	if len(c.Links) == 0 {
		return nil, nil
	}
	aliases := make([]string, 0, len(c.Links))
	for a := range c.Links {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	var out []libnetwork.LinkedContainer
	for _, alias := range aliases {
		other, err := d.containers.Get(c.Links[alias])
		if err != nil || other.ID != c.Links[alias] {
			continue
		}
		st, err := peekLinked(c, other, alias)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// removeLink serves rm --link: name is "/PARENT/ALIAS". As in Docker, a
// name that is not a link is refused (400): it would remove nothing.
func (d *Daemon) removeLink(name string) error {
	n := "/" + strings.TrimPrefix(name, "/")
	if !strings.Contains(n[1:], "/") {
		return errdefs.InvalidParameter(fmt.Errorf("Conflict, cannot remove the default link name of the container"))
	}
	if _, err := d.containers.RemoveLink(n); err != nil {
		return err
	}
	return nil
}

// inspectHostConfig is the host config inspect shows: the links as Docker
// shows them, rebuilt from the record ("/CHILD:/PARENT/ALIAS", with
// today's names; none once rm --link removed them). On a user-defined
// network Docker shows them in the endpoint's Links instead (userLinks).
// The caller holds c's lock.
func inspectHostConfig(c *container.Container, links []string) *containertypes.HostConfig {
	if len(c.HostConfig.Links) == 0 && len(c.Links) == 0 {
		return c.HostConfig
	}
	hc := *c.HostConfig
	hc.Links = nil
	if len(links) > 0 {
		hc.Links = links
	}
	return &hc
}
