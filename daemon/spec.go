package daemon

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	containertypes "github.com/docker/docker/api/types/container"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	"github.com/sdengine/engine/libnetwork/resolver"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/systemd"
	"github.com/sdengine/engine/runconfig"
)

// hostConfigOptions are the spec's options that the container's record
// gives as they are: its resources, security and devices (the "host
// config" spec step). The steps after it add the process, the hostname,
// the mounts and the namespaces. The caller holds the container's lock.
func (d *Daemon) hostConfigOptions(c *container.Container, rootfs string) oci.SpecOptions {
	hc := c.HostConfig
	network := "none"
	if hc.NetworkMode == "host" {
		network = "host"
	}
	return oci.SpecOptions{
		ID:                c.ID,
		Rootfs:            rootfs,
		ReadonlyRootfs:    hc.ReadonlyRootfs,
		Privileged:        hc.Privileged,
		CapAdd:            hc.CapAdd,
		CapDrop:           hc.CapDrop,
		SecurityOpt:       hc.SecurityOpt,
		NetworkMode:       network,
		Memory:            hc.Memory,
		MemorySwap:        hc.MemorySwap,
		MemoryReservation: hc.MemoryReservation,
		OomKillDisable:    hc.OomKillDisable != nil && *hc.OomKillDisable,
		OomScoreAdj:       hc.OomScoreAdj,
		NanoCPUs:          hc.NanoCPUs,
		CPUShares:         hc.CPUShares,
		CpusetCpus:        hc.CpusetCpus,
		CpusetMems:        hc.CpusetMems,
		BlkioWeight:       hc.BlkioWeight,
		PidsLimit:         hc.PidsLimit,
		Ulimits:           hc.Ulimits,
		ShmSize:           hc.ShmSize,
		CgroupParent:      hc.CgroupParent,
		Devices:           specDevices(hc),
		DeviceCgroupRules: hc.DeviceCgroupRules,
		SystemdCgroup:     d.cgroupDriver == cgroupDriverSystemd,
		CgroupLayout:      hc.Annotations[oci.CgroupLayoutAnnotation],
		Domainname:        c.Config.Domainname,
		Sysctls:           hc.Sysctls,
		MaskedPaths:       hc.MaskedPaths,
		ReadonlyPaths:     hc.ReadonlyPaths,
	}
}

// specDevices is the container's --device mappings as the spec takes them.
func specDevices(hc *containertypes.HostConfig) []oci.Device {
	var out []oci.Device
	for _, d := range hc.Devices {
		out = append(out, oci.Device{PathOnHost: d.PathOnHost, PathInContainer: d.PathInContainer, CgroupPermissions: d.CgroupPermissions})
	}
	return out
}

// containerEnv is the process environment (of the container's process and
// of its execs): the merged config, container_uuid (docs/systemd.md; the user's
// value wins), and what Docker always adds.
func containerEnv(c *container.Container, hostname string) []string {
	// The links' variables come first: the container's own win.
	env := c.Config.Env
	if len(c.LinkEnv) > 0 {
		env = runconfig.MergeEnv(c.LinkEnv, env)
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, systemd.ContainerUUIDVar+"=") }) {
		env = append([]string{systemd.ContainerUUIDVar + "=" + systemd.UUID(c.ID[:32])}, env...)
	}
	return oci.DefaultEnv(env, hostname, c.Config.Tty)
}

// ensureDir makes dir inside rootfs without following a symlink out of it.
func ensureDir(rootfs, dir string) error {
	p, err := securejoin.SecureJoin(rootfs, dir)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("create working directory %s: %w", dir, err))
	}
	return nil
}

// mounts computes the container's mounts: the files the engine writes
// (hostname, hosts, resolv.conf), then the user's binds and tmpfs.
func (d *Daemon) mounts(c *container.Container, hostname, rootfs string) ([]specs.Mount, error) {
	if !c.HostConfig.NetworkMode.IsContainer() {
		if err := d.writeNetworkFiles(c, hostname); err != nil {
			return nil, err
		}
	}
	ro := func(m specs.Mount) specs.Mount {
		if c.HostConfig.ReadonlyRootfs {
			m.Options = append(m.Options, "ro")
		}
		return m
	}
	user, err := d.userMounts(c, rootfs)
	if err != nil {
		return nil, err
	}
	var ms []specs.Mount
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		if slices.ContainsFunc(user, func(m specs.Mount) bool { return m.Destination == "/etc/"+f }) {
			continue // the user's file wins, as in Docker
		}
		ms = append(ms, ro(specs.Mount{
			Destination: "/etc/" + f, Type: "bind", Source: networkFile(c, f),
			Options: []string{"rbind", "rprivate"},
		}))
	}
	ms = append(ms, user...)
	for dst, opts := range c.HostConfig.Tmpfs {
		o := []string{"nosuid", "nodev", "noexec"}
		if opts != "" {
			o = strings.Split(opts, ",")
		}
		ms = append(ms, specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: o})
	}
	return ms, nil
}

// bindDataRoot applies Docker's rule to a bind whose source is the data
// root, inside it or above it: so that the container holds no private
// reference to the daemon's own mounts (which would keep the daemon from
// removing them), its propagation must be rslave or rshared; without one
// it is made rslave, any other is refused with Docker's message.
func bindDataRoot(m *specs.Mount, root string) error {
	within := func(p, dir string) bool {
		return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
	}
	root = filepath.Clean(root)
	if !within(m.Source, root) && !within(root, m.Source) {
		return nil
	}
	propagation := ""
	for _, o := range m.Options {
		switch o {
		case "private", "rprivate", "shared", "rshared", "slave", "rslave":
			propagation = o
		}
	}
	switch propagation {
	case "":
		m.Options = append(m.Options, "rslave")
	case "rslave", "rshared":
	default:
		return errdefs.InvalidParameter(fmt.Errorf(`invalid mount config: must use either propagation mode "rslave" or "rshared" when mount source is within the daemon root, daemon root: %q, bind mount source: %q, propagation: %q`, root, m.Source, propagation))
	}
	return nil
}

// writeNetworkFiles writes /etc/hostname, /etc/hosts and /etc/resolv.conf
// for the container: on a network, its address names it (with
// --domainname, its FQDN first), --add-host adds lines (host-gateway: the
// gateway of the default bridge, else of its first network); resolv.conf
// (resolvConf) names the embedded DNS server on a user-defined network,
// otherwise the host's resolvers; the host network mode shares the host's
// files' content.
func (d *Daemon) writeNetworkFiles(c *container.Container, hostname string) error {
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n"
	names := hostname
	if dn := c.Config.Domainname; dn != "" {
		names = hostname + "." + dn + " " + hostname
	}
	switch {
	case c.HostConfig.NetworkMode == "host":
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts = string(b)
		}
	case c.Network != nil && c.Network.IPAddress != "":
		hosts += c.Network.IPAddress + "\t" + names + "\n"
	default:
		hosts += "127.0.1.1\t" + names + "\n"
	}
	for _, l := range c.LinkHosts {
		hosts += l + "\n"
	}
	for _, h := range c.HostConfig.ExtraHosts {
		name, ip, ok := strings.Cut(h, ":")
		if !ok {
			name, ip, ok = strings.Cut(h, "=")
		}
		if !ok {
			return errdefs.InvalidParameter(fmt.Errorf("invalid extra host %q", h))
		}
		if ip == "host-gateway" {
			ip = d.hostGateway(c)
			if ip == "" {
				return errdefs.InvalidParameter(fmt.Errorf("unable to derive the IP value for host-gateway"))
			}
		}
		hosts += ip + "\t" + name + "\n"
	}
	rc := d.resolvConf(c)
	files := map[string]string{"hostname": hostname + "\n", "hosts": hosts, "resolv.conf": rc}
	for name, content := range files {
		if err := os.WriteFile(c.File(name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// hostGateway is --add-host's host-gateway: the default bridge's gateway
// (as Docker), else the gateway of the container's first network.
func (d *Daemon) hostGateway(c *container.Container) string {
	if d.bridge != nil {
		return d.bridge.Gateway().String()
	}
	if c.Network != nil && c.Network.Gateway != "" {
		return c.Network.Gateway
	}
	return ""
}

// resolvConf is the container's resolv.conf: the host's (without its
// loopback resolvers when the container has a namespace of its own, which
// cannot reach them), with --dns, --dns-search and --dns-option replacing
// its nameservers, search domains and options; on a user-defined network
// the nameserver is the embedded DNS server, which forwards to them.
func (d *Daemon) resolvConf(c *container.Container) string {
	host := d.hostResolvConf()
	hc := c.HostConfig
	var ns, search, opts, other []string
	for _, line := range strings.Split(host, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "nameserver":
			ns = append(ns, f[1])
		case len(f) >= 2 && (f[0] == "search" || f[0] == "domain"):
			search = f[1:]
		case len(f) >= 2 && f[0] == "options":
			opts = append(opts, f[1:]...)
		case len(f) > 0:
			other = append(other, line)
		}
	}
	if len(hc.DNS) > 0 {
		ns = hc.DNS
	}
	if len(hc.DNSSearch) > 0 {
		search = hc.DNSSearch
		if len(search) == 1 && search[0] == "." {
			search = nil
		}
	}
	if len(hc.DNSOptions) > 0 {
		opts = hc.DNSOptions
	}
	var b strings.Builder
	for _, l := range other {
		b.WriteString(l + "\n")
	}
	embedded := d.usesEmbeddedDNS(c)
	switch {
	case embedded:
		b.WriteString("nameserver " + resolver.Address + "\n")
	case c.HostConfig.NetworkMode == "host":
		for _, n := range ns {
			b.WriteString("nameserver " + n + "\n")
		}
	default:
		var kept []string
		for _, n := range ns {
			if ip, err := netip.ParseAddr(strings.Split(n, "%")[0]); err == nil && ip.IsLoopback() && len(hc.DNS) == 0 {
				continue
			}
			kept = append(kept, n)
		}
		if len(kept) == 0 && len(hc.DNS) == 0 && c.Network != nil {
			kept = []string{"8.8.8.8", "8.8.4.4"}
		}
		for _, n := range kept {
			b.WriteString("nameserver " + n + "\n")
		}
	}
	if len(search) > 0 {
		b.WriteString("search " + strings.Join(search, " ") + "\n")
	}
	if len(opts) > 0 {
		b.WriteString("options " + strings.Join(opts, " ") + "\n")
	}
	if embedded {
		// As Docker's: where the embedded server forwards.
		b.WriteString("\n# Based on host file: '/etc/resolv.conf' (internal resolver)\n# ExtServers: [" + strings.Join(ns, " ") + "]\n")
	}
	return b.String()
}

// recursiveReadOnly reports whether the kernel has mount_setattr(2), which
// the runtime's "rro" option needs (Linux 5.12); asked once.
var recursiveReadOnly = sync.OnceValue(func() bool {
	err := unix.MountSetattr(-1, "", 0, &unix.MountAttr{})
	return err != unix.ENOSYS
})
