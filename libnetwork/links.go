package libnetwork

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/go-connections/nat"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Legacy links (--link NAME[:ALIAS]) on the default bridge, as Docker
// has them: at each start the linked containers must run on the default
// bridge, and give the environment ALIAS_PORT_..., ALIAS_NAME and
// ALIAS_ENV_... and /etc/hosts a line "IP ALIAS HOSTNAME NAME". The
// daemon keeps the links in the container's record and reads the linked
// containers' records (LinkedContainer); the address is the linked
// container's endpoint here. On a user-defined network links are names of
// the embedded DNS instead (dns.go).

// LinkedContainer is what a link needs of the linked container's record.
type LinkedContainer struct {
	// Alias is the link's alias; ID the linked container's.
	Alias, ID string
	// Name is the linked container's name ("/db"); Hostname its
	// hostname (its short ID when it has none).
	Name, Hostname string
	Running        bool
	Env            []string
	Ports          []nat.Port
}

// ParseLink reads a link "NAME[:ALIAS]" (ALIAS defaults to NAME); a link
// as a record shows it ("/NAME:/CONTAINER/ALIAS") reads as NAME, ALIAS.
func ParseLink(link string) (name, alias string, err error) {
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

// legacyLinks computes, at a container's start, what its links give it:
// the environment and /etc/hosts lines. A linked container that does not
// run, or not on the default bridge, fails the start.
func (c *Controller) legacyLinks(req *JoinRequest) (env, hosts []string, err error) {
	for _, l := range req.LegacyLinks {
		ip := ""
		if sb := c.sandbox(l.ID); sb != nil {
			c.sbMu.Lock()
			for _, ep := range sb.att.Endpoints() {
				if ep.NetworkID == "" {
					ip = ep.IPAddress
				}
			}
			c.sbMu.Unlock()
		}
		full := req.Name + "/" + l.Alias
		if !l.Running {
			return nil, nil, errdefs.Conflict(fmt.Errorf("Cannot link to a non running container: %s AS %s", l.Name, full))
		}
		if ip == "" || c.bridge == nil || !IsBridgeMode(req.NetworkMode) {
			return nil, nil, errdefs.InvalidParameter(fmt.Errorf("Cannot link to %s, as it does not belong to the default network", l.Name))
		}
		env = append(env, linkEnv(l.Alias, full, ip, l)...)
		names := l.Alias + " " + l.Hostname
		if l.Alias != strings.TrimPrefix(l.Name, "/") {
			names += " " + strings.TrimPrefix(l.Name, "/")
		}
		hosts = append(hosts, ip+"\t"+names)
	}
	return env, hosts, nil
}

// linkEnv is the environment one link gives, in Docker's form: for the
// alias "db" of a container exposing 5432/tcp at 172.17.0.2,
// DB_PORT=tcp://172.17.0.2:5432 (the lowest port), for each port
// DB_PORT_5432_TCP (the URL), _ADDR, _PORT and _PROTO, DB_NAME=/me/db,
// and DB_ENV_K=V for the linked container's own variables but HOME and
// PATH.
func linkEnv(alias, full, ip string, st LinkedContainer) []string {
	prefix := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(alias))
	ports := append([]nat.Port(nil), st.Ports...)
	sort.Slice(ports, func(i, j int) bool {
		if ports[i].Int() != ports[j].Int() {
			return ports[i].Int() < ports[j].Int()
		}
		return ports[i].Proto() < ports[j].Proto()
	})
	var env []string
	if len(ports) > 0 {
		env = append(env, fmt.Sprintf("%s_PORT=%s://%s:%s", prefix, ports[0].Proto(), ip, ports[0].Port()))
	}
	for _, p := range ports {
		k := prefix + "_PORT_" + p.Port() + "_" + strings.ToUpper(p.Proto())
		env = append(env,
			fmt.Sprintf("%s=%s://%s:%s", k, p.Proto(), ip, p.Port()),
			k+"_ADDR="+ip,
			k+"_PORT="+strconv.Itoa(p.Int()),
			k+"_PROTO="+p.Proto())
	}
	env = append(env, prefix+"_NAME="+full)
	for _, kv := range st.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "HOME" || k == "PATH" {
			continue
		}
		env = append(env, prefix+"_ENV_"+k+"="+v)
	}
	return env
}
