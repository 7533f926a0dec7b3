package daemon

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Legacy links (--link NAME[:ALIAS]) on the default bridge, as Docker
// has them: the record keeps alias → the linked container's ID
// (Container.Links), so that renaming either side keeps the link; the
// link is a name of the linked container ("/PARENT/ALIAS", the store's
// linkedLocked); at each start the linked containers must run on the
// default bridge, and give the environment ALIAS_PORT_..., ALIAS_NAME and
// ALIAS_ENV_... and /etc/hosts a line "IP ALIAS HOSTNAME NAME".
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
	if len(hc.Links) == 0 || isUserMode(hc.NetworkMode) {
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
		name, alias, err := parseLink(l)
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

// parseLink reads a link "NAME[:ALIAS]" (ALIAS defaults to NAME); a link
// as a record shows it ("/NAME:/CONTAINER/ALIAS") reads as NAME, ALIAS.
func parseLink(link string) (name, alias string, err error) {
	if link == "" {
		return "", "", fmt.Errorf("empty string specified for links")
	}
	parts := strings.Split(link, ":")
	if len(parts) > 2 {
		return "", "", fmt.Errorf("bad format for links: %s", link)
	}
	name = strings.TrimPrefix(parts[0], "/")
	alias = name
	if len(parts) == 2 && parts[1] != "" {
		alias = path.Base(parts[1])
	}
	if name == "" || alias == "" || alias == "/" || alias == "." {
		return "", "", fmt.Errorf("bad format for links: %s", link)
	}
	return name, alias, nil
}

// linkedState is what a link needs of the linked container.
type linkedState struct {
	name, hostname, ip string
	running            bool
	env                []string
	ports              []nat.Port
}

// peekLinked reads the linked container's state under its lock, only
// trying it (the caller holds its own container's lock; see peek).
func peekLinked(self, other *container.Container) (linkedState, error) {
	if other == self {
		return linkedState{}, errdefs.InvalidParameter(fmt.Errorf("container %s cannot link to itself", self.ID))
	}
	deadline := time.Now().Add(lockWait)
	for !other.TryLock() {
		if time.Now().After(deadline) {
			return linkedState{}, errdefs.Conflict(fmt.Errorf("container %s is busy (being started, stopped or removed); try again", other.ID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer other.Unlock()
	st := linkedState{
		name:     other.Name,
		hostname: other.Config.Hostname,
		running:  other.State.Running(),
		env:      append([]string(nil), other.Config.Env...),
	}
	if st.hostname == "" {
		st.hostname = other.ID[:12]
	}
	for _, ep := range containerEndpoints(other) {
		if ep.NetworkID == "" {
			st.ip = ep.IPAddress
		}
	}
	for p := range other.Config.ExposedPorts {
		st.ports = append(st.ports, p)
	}
	return st, nil
}

// setupLinks computes, at c's start, what its links give it (c.LinkEnv,
// c.LinkHosts). A linked container that is gone is skipped, as in Docker;
// one that does not run, or not on the default bridge, fails the start.
// The caller holds c's lock.
func (d *Daemon) setupLinks(c *container.Container) error {
	c.LinkEnv, c.LinkHosts = nil, nil
	if len(c.Links) == 0 {
		return nil
	}
	aliases := make([]string, 0, len(c.Links))
	for a := range c.Links {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	for _, alias := range aliases {
		other, err := d.containers.Get(c.Links[alias])
		if err != nil || other.ID != c.Links[alias] {
			continue
		}
		st, err := peekLinked(c, other)
		if err != nil {
			return err
		}
		full := c.Name + "/" + alias
		if !st.running {
			return errdefs.Conflict(fmt.Errorf("Cannot link to a non running container: %s AS %s", st.name, full))
		}
		if st.ip == "" || d.bridge == nil || !isBridgeMode(c.HostConfig.NetworkMode) {
			return errdefs.InvalidParameter(fmt.Errorf("Cannot link to %s, as it does not belong to the default network", st.name))
		}
		c.LinkEnv = append(c.LinkEnv, linkEnv(alias, full, st)...)
		names := alias + " " + st.hostname
		if alias != strings.TrimPrefix(st.name, "/") {
			names += " " + strings.TrimPrefix(st.name, "/")
		}
		c.LinkHosts = append(c.LinkHosts, st.ip+"\t"+names)
	}
	return nil
}

// linkEnv is the environment one link gives, in Docker's form: for the
// alias "db" of a container exposing 5432/tcp at 172.17.0.2,
// DB_PORT=tcp://172.17.0.2:5432 (the lowest port), for each port
// DB_PORT_5432_TCP (the URL), _ADDR, _PORT and _PROTO, DB_NAME=/me/db,
// and DB_ENV_K=V for the linked container's own variables but HOME and
// PATH.
func linkEnv(alias, full string, st linkedState) []string {
	prefix := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(alias))
	ports := append([]nat.Port(nil), st.ports...)
	sort.Slice(ports, func(i, j int) bool {
		if ports[i].Int() != ports[j].Int() {
			return ports[i].Int() < ports[j].Int()
		}
		return ports[i].Proto() < ports[j].Proto()
	})
	var env []string
	if len(ports) > 0 {
		env = append(env, fmt.Sprintf("%s_PORT=%s://%s:%s", prefix, ports[0].Proto(), st.ip, ports[0].Port()))
	}
	for _, p := range ports {
		k := prefix + "_PORT_" + p.Port() + "_" + strings.ToUpper(p.Proto())
		env = append(env,
			fmt.Sprintf("%s=%s://%s:%s", k, p.Proto(), st.ip, p.Port()),
			k+"_ADDR="+st.ip,
			k+"_PORT="+strconv.Itoa(p.Int()),
			k+"_PROTO="+p.Proto())
	}
	env = append(env, prefix+"_NAME="+full)
	for _, kv := range st.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "HOME" || k == "PATH" {
			continue
		}
		env = append(env, prefix+"_ENV_"+k+"="+v)
	}
	return env
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
