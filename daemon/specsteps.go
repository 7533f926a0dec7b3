package daemon

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/api/fdpass"
	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/daemon/oci"
	runconfigopts "github.com/sdengine/engine/runconfig/opts"
)

// specBuild is one container's OCI spec while the spec steps make it:
// first its options (oci.SpecOptions), then, from the "OCI spec" step on,
// the spec itself.
type specBuild struct {
	c      *container.Container
	rootfs string
	files  *fdpass.Files // the descriptors the client passed, if any
	// hostname is the process's $HOSTNAME and /etc/hostname's content.
	hostname string
	opts     oci.SpecOptions
	spec     *specs.Spec
}

// specStep is one named stage of a container's spec. A step's error is
// returned wrapped with its name.
type specStep struct {
	name  string
	apply func(d *Daemon, b *specBuild) error
}

// specSteps is everything that shapes a container's spec at start, in
// order; each line says why its step is where it is. The steps before
// "OCI spec" fill in the options, oci.Build (a pure builder) turns them
// into the spec, and the steps after it amend the spec.
var specSteps = []specStep{
	// First: the base every later step refines (the network mode, say).
	{"host config", func(d *Daemon, b *specBuild) error { b.opts = d.hostConfigOptions(b.c, b.rootfs); return nil }},
	// Before the process and the mounts: $HOSTNAME and /etc/hostname need it.
	{"hostname", (*Daemon).hostnameStep},
	// After the hostname (its $HOSTNAME); before the reaper, which wraps its args.
	{"process", (*Daemon).processStep},
	// After the hostname, which the /etc files hold; before the reaper's bind.
	{"mounts", func(d *Daemon, b *specBuild) (err error) {
		b.opts.Mounts, err = d.mounts(b.c, b.hostname, b.rootfs)
		return err
	}},
	// The IPC, PID and UTS modes; before the pod, whose namespaces win.
	{"namespaces", func(d *Daemon, b *specBuild) error { return d.namespaceOptions(b.c, &b.opts) }},
	// The bridge's or the donor's namespace; before the pod, whose namespace wins.
	{"network", func(d *Daemon, b *specBuild) error { return d.networkOptions(b.c, &b.opts) }},
	// After the modes: the sandbox's pinned namespaces and hostname win.
	{"pod", func(d *Daemon, b *specBuild) error { podOptions(b.c, &b.opts); return nil }},
	// Last of the options: it wraps the final args and adds its own bind.
	{"init reaper", func(d *Daemon, b *specBuild) error { return applyReaper(b.c, &b.opts) }},
	// The options are complete: from here on the steps amend the spec.
	{"OCI spec", func(d *Daemon, b *specBuild) (err error) { b.spec, err = oci.Build(b.opts); return err }},
	// After Build, whose default (rprivate) it changes when a bind needs it.
	{"rootfs propagation", func(d *Daemon, b *specBuild) error { applyRootfsPropagation(b.c, b.spec); return nil }},
	// After the base spec, which it rewrites (mounts, capabilities, seccomp, env).
	{"systemd profile", (*Daemon).systemdProfileStep},
	// After the profile: it uses the profile's /run/host when there is one.
	{"notify socket", func(d *Daemon, b *specBuild) error { return d.applyNotify(b.c, b.spec) }},
	// Late: it asks systemd whether the unit runs, as near the start as it can.
	{"unit binding", func(d *Daemon, b *specBuild) error { return d.applyUnitBind(b.c, b.spec) }},
	// After every step that sets env or namespaces: LISTEN_PID needs its own PID 1.
	{"passed files", func(d *Daemon, b *specBuild) error { return applyPassedFiles(b.c, b.spec, b.files) }},
	// Last: the hooks run on the spec as the runtime gets it.
	{"hooks", func(d *Daemon, b *specBuild) error { return d.applyHooks(b.c, b.spec) }},
}

// buildSpec makes c's OCI spec by running specSteps in order. files are
// the descriptors the client passed for the first process (nil: none).
// The caller holds c's lock.
func (d *Daemon) buildSpec(c *container.Container, rootfs string, files *fdpass.Files) (*specs.Spec, error) {
	b := &specBuild{c: c, rootfs: rootfs, files: files}
	for _, s := range specSteps {
		if err := s.apply(d, b); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return b.spec, nil
}

// hostnameStep decides the process's hostname: the container's own, or
// with --network container:X the donor's, whose network files it copies.
// A pod's hostname, set later, names the UTS namespace only.
func (d *Daemon) hostnameStep(b *specBuild) error {
	b.hostname = b.c.Hostname()
	if b.c.HostConfig.NetworkMode.IsContainer() {
		// The network's files and name are the donor's, as in Docker.
		h, err := d.donorNetworkFiles(b.c)
		if err != nil {
			return err
		}
		b.hostname = h
	}
	b.opts.Hostname = b.hostname
	return nil
}

// processStep makes the container's first process (processSpec, which
// execs use too) with its user resolved in the rootfs, and makes its
// working directory there if the image has none.
func (d *Daemon) processStep(b *specBuild) error {
	c := b.c
	uid, gid, groups, err := oci.ResolveUserGroups(b.rootfs, c.Config.User, c.HostConfig.GroupAdd, imageGroups(c))
	if err != nil {
		return err
	}
	p := processSpec(c, b.hostname, process{
		Args: append([]string{c.Path}, c.Args...),
		UID:  uid, GID: gid, AdditionalGids: groups,
		Tty: c.Config.Tty,
	})
	if err := ensureDir(b.rootfs, p.Cwd); err != nil {
		return err
	}
	setProcess(&b.opts, p)
	return nil
}

// systemdProfileStep applies the systemd profile to a container that boots
// systemd (--init=systemd).
func (d *Daemon) systemdProfileStep(b *specBuild) error {
	if b.c.InitSystem != runconfigopts.InitSystemd {
		return nil
	}
	return d.applySystemdProfile(b.c, b.rootfs, b.spec)
}
