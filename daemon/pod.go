package daemon

import (
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
)

// podOptions joins a CRI pod's container to the namespaces its sandbox
// pinned (runconfig.Pod), over what its own modes chose. The HostConfig the
// CRI gave says "none" for a pod network and "private" for a pod IPC, so
// that nothing else was attached or mounted for them.
func podOptions(c *container.Container, o *oci.SpecOptions) {
	p := c.Pod
	if p == nil {
		return
	}
	if p.NetNS != "" {
		// The pod's namespace is the pod's own, as a bridge container's
		// is: the engine's default network sysctls apply to it.
		o.NetworkMode, o.NetNS, o.NetNSOwned = "", p.NetNS, true
	}
	if p.IPCNS != "" {
		o.IPC = oci.NamespaceShare{Path: p.IPCNS}
		if p.ShmDir != "" {
			o.ShmSource = p.ShmDir
		}
	}
	if p.UTSNS != "" {
		o.UTS = oci.NamespaceShare{Path: p.UTSNS}
	}
	if p.PIDNS != "" {
		o.PID = oci.NamespaceShare{Path: p.PIDNS}
	}
	if p.Hostname != "" && !o.UTS.Host {
		o.Hostname = p.Hostname
	}
}

// networkFile is the host file bound at /etc/name ("hostname", "hosts",
// "resolv.conf"): the pod's when its sandbox wrote one, else the one the
// engine wrote for the container.
func networkFile(c *container.Container, name string) string {
	if c.Pod != nil && c.Pod.Files[name] != "" {
		return c.Pod.Files[name]
	}
	return c.File(name)
}
