package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	volumetypes "github.com/docker/docker/api/types/volume"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/container"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/volume"
	"golang.org/x/sys/unix"
)

// planMounts decides the container's mount points from its create
// request, in Docker's order: --volumes-from, then -v, then --mount (a
// destination given twice is refused), then the config's and image's
// VOLUMEs as anonymous volumes where nothing else (nor a --tmpfs) is
// mounted. No volume is made here: createVolumes does that once the
// container has an ID.
func (d *Daemon) planMounts(cfg *containertypes.Config, hc *containertypes.HostConfig, roNonRecursive bool) ([]*container.MountPoint, error) {
	var mps []*container.MountPoint
	byDst := map[string]int{}
	add := func(mp *container.MountPoint, replace bool) error {
		if i, ok := byDst[mp.Destination]; ok {
			if !replace {
				return errdefs.InvalidParameter(fmt.Errorf("Duplicate mount point: %s", mp.Destination))
			}
			mps[i] = mp
			return nil
		}
		byDst[mp.Destination] = len(mps)
		mps = append(mps, mp)
		return nil
	}
	for _, spec := range hc.VolumesFrom {
		id, mode, err := parseVolumesFrom(spec)
		if err != nil {
			return nil, err
		}
		src, err := d.containers.Get(id)
		if err != nil {
			if errdefs.IsNotFound(err) {
				return nil, errdefs.InvalidParameter(err)
			}
			return nil, err
		}
		src.Lock()
		from := mountPointsOf(src)
		src.Unlock()
		for _, m := range from {
			cp := *m
			switch mode {
			case "ro":
				cp.RW = false
			case "rw":
				cp.RW = true
			}
			if mode != "" {
				cp.Mode = mode
			}
			cp.CopyData = false // the first container filled it
			// A later -v or --mount at the same destination wins.
			_ = add(&cp, true)
		}
	}
	fromCount := len(mps)
	replaceable := func(dst string) bool { i, ok := byDst[dst]; return ok && i < fromCount }
	for _, b := range hc.Binds {
		mp, err := parseBindSpec(b, roNonRecursive)
		if err != nil {
			return nil, err
		}
		if err := d.checkBindSource(mp); err != nil {
			return nil, err
		}
		if err := add(mp, replaceable(mp.Destination)); err != nil {
			return nil, err
		}
	}
	for _, m := range hc.Mounts {
		mp, err := parseMountSpec(m, roNonRecursive)
		if err != nil {
			return nil, err
		}
		if err := d.checkBindSource(mp); err != nil {
			return nil, err
		}
		if mp.Type == mount.TypeImage {
			if err := d.resolveImageMount(mp); err != nil {
				return nil, err
			}
		}
		if err := add(mp, replaceable(mp.Destination)); err != nil {
			return nil, err
		}
	}
	for _, dst := range slices.Sorted(mapKeys(cfg.Volumes)) {
		clean := filepath.Clean(dst)
		if !filepath.IsAbs(clean) {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s': must be an absolute path", dst))
		}
		if _, ok := byDst[clean]; ok {
			continue
		}
		if _, ok := hc.Tmpfs[clean]; ok {
			continue
		}
		_ = add(&container.MountPoint{Type: mount.TypeVolume, Destination: clean, Driver: volume.DefaultDriver, RW: true, CopyData: true}, false)
	}
	return mps, nil
}

func mapKeys(m map[string]struct{}) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkBindSource applies the data root rule (bindDataRoot) to a bind.
func (d *Daemon) checkBindSource(mp *container.MountPoint) error {
	if mp.Type != mount.TypeBind {
		return nil
	}
	m := specs.Mount{Source: mp.Source}
	if mp.Propagation != "" && !(mp.Propagation == mount.PropagationRPrivate && !explicitPropagation(mp)) {
		m.Options = []string{string(mp.Propagation)}
	}
	if err := bindDataRoot(&m, d.cfg.Root); err != nil {
		return err
	}
	for _, o := range m.Options {
		if o == "rslave" && mp.Propagation != mount.PropagationRShared {
			mp.Propagation = mount.PropagationRSlave
		}
	}
	return nil
}

// explicitPropagation reports whether the user chose the bind's
// propagation (rprivate is also the default).
func explicitPropagation(mp *container.MountPoint) bool {
	if mp.Spec != nil {
		return mp.Spec.BindOptions != nil && mp.Spec.BindOptions.Propagation != ""
	}
	for _, o := range splitMode(mp.Mode) {
		if o == string(mp.Propagation) {
			return true
		}
	}
	return false
}

func splitMode(mode string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(mode); i++ {
		if i == len(mode) || mode[i] == ',' {
			out = append(out, mode[start:i])
			start = i + 1
		}
	}
	return out
}

// mountPointsOf is the container's mount points; a record written before
// they were kept has its binds read again. The caller holds c's lock.
func mountPointsOf(c *container.Container) []*container.MountPoint {
	if c.MountPoints != nil || len(c.HostConfig.Binds) == 0 {
		return c.MountPoints
	}
	var out []*container.MountPoint
	for _, b := range c.HostConfig.Binds {
		if mp, err := parseBindSpec(b, false); err == nil && mp.Type == mount.TypeBind {
			out = append(out, mp)
		}
	}
	return out
}

// createVolumes makes (or finds) the volumes the mount points name, the
// anonymous ones with a new name, and records that the container
// references them. On error what it referenced is released and the
// anonymous volumes it made are removed.
func (d *Daemon) createVolumes(id string, mps []*container.MountPoint) (retErr error) {
	var made, refd []string
	defer func() {
		if retErr != nil {
			for _, n := range refd {
				d.volumes.Release(n, id)
			}
			for _, n := range made {
				_ = d.volumes.Remove(n, true)
			}
		}
	}()
	for _, mp := range mps {
		if mp.Type != mount.TypeVolume {
			continue
		}
		var opts, labels map[string]string
		if mp.Spec != nil && mp.Spec.VolumeOptions != nil {
			labels = mp.Spec.VolumeOptions.Labels
			if dc := mp.Spec.VolumeOptions.DriverConfig; dc != nil {
				opts = dc.Options
			}
		}
		anonymous := mp.Name == ""
		existed := false
		if !anonymous {
			if _, err := d.volumes.Get(mp.Name); err == nil {
				existed = true
				opts, labels = nil, nil // an existing volume is used as it is
			}
		}
		v, err := d.volumes.Create(mp.Name, mp.Driver, opts, labels)
		if err != nil {
			return err
		}
		if !existed {
			d.volumeEvent(v.Name, eventtypes.ActionCreate)
		}
		if anonymous {
			made = append(made, v.Name)
		}
		mp.Name = v.Name
		mp.Source = d.volumes.Path(v.Name)
		if err := d.volumes.Reference(v.Name, id); err != nil {
			return err
		}
		refd = append(refd, v.Name)
		if mp.Subpath != "" {
			// Docker checks the subpath when the container starts; so
			// does this engine (a volume may be filled in between).
			continue
		}
	}
	return nil
}

// releaseVolumes drops the container's references to its volumes; with
// removeAnonymous (rm -v, --rm) its anonymous volumes no other container
// uses are removed, as Docker does.
func (d *Daemon) releaseVolumes(c *container.Container, removeAnonymous bool) {
	for _, mp := range c.MountPoints {
		if mp.Type != mount.TypeVolume || mp.Name == "" {
			continue
		}
		d.volumes.Release(mp.Name, c.ID)
		if !removeAnonymous {
			continue
		}
		v, err := d.volumes.Get(mp.Name)
		if err != nil || !v.Anonymous() {
			continue
		}
		if err := d.volumes.Remove(mp.Name, true); err != nil {
			if !errdefs.IsConflict(err) {
				slog.Warn("remove anonymous volume", "container", c.ID, "volume", mp.Name, "err", err)
			}
			continue
		}
		d.volumeEvent(mp.Name, eventtypes.ActionDestroy)
	}
}

// restoreVolumeRefs records, when the daemon starts, which containers
// reference which volumes.
func (d *Daemon) restoreVolumeRefs() {
	for _, c := range d.containers.List() {
		c.Lock()
		for _, mp := range c.MountPoints {
			if mp.Type == mount.TypeVolume && mp.Name != "" {
				if err := d.volumes.Reference(mp.Name, c.ID); err != nil {
					slog.Warn("volume of a container is missing", "container", c.ID, "volume", mp.Name, "err", err)
				}
			}
		}
		c.Unlock()
	}
}

// remountVolumes counts the volumes of containers that kept running
// while no daemon was there as mounted (the driver's mounts outlived it).
func (d *Daemon) remountVolumes() {
	for _, c := range d.containers.List() {
		c.Lock()
		if c.State.Running() {
			for _, mp := range c.MountPoints {
				if mp.Type == mount.TypeVolume && mp.Name != "" {
					if _, err := d.volumes.Mount(mp.Name, c.ID); err != nil {
						slog.Warn("volume of a running container", "container", c.ID, "volume", mp.Name, "err", err)
					}
				}
			}
		}
		c.Unlock()
	}
}

// unmountVolumes ends the container's use of its volumes and image
// mounts (exit, failed start). The caller holds c's lock.
func (d *Daemon) unmountVolumes(c *container.Container) {
	d.unmountImageMounts(c)
	for _, mp := range c.MountPoints {
		if mp.Type == mount.TypeVolume && mp.Name != "" {
			if err := d.volumes.Unmount(mp.Name, c.ID); err != nil {
				slog.Warn("unmount volume", "container", c.ID, "volume", mp.Name, "err", err)
			}
		}
	}
}

// userMounts makes the spec's mounts of the container's mount points:
// volumes are mounted by their driver (and filled from the image on first
// use), binds made with their options. The caller holds c's lock.
func (d *Daemon) userMounts(c *container.Container, rootfs string) (_ []specs.Mount, retErr error) {
	defer func() {
		if retErr != nil {
			d.unmountVolumes(c)
		}
	}()
	var ms []specs.Mount
	for i, mp := range mountPointsOf(c) {
		switch mp.Type {
		case mount.TypeImage:
			m, err := d.imageSpecMount(c, i, mp)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		case mount.TypeBind:
			m, err := bindSpecMount(mp)
			if err != nil {
				return nil, err
			}
			if _, err := os.Stat(mp.Source); os.IsNotExist(err) && mp.Spec == nil || os.IsNotExist(err) && mp.Spec.BindOptions != nil && mp.Spec.BindOptions.CreateMountpoint {
				// Docker creates a missing -v source as a directory.
				if err := os.MkdirAll(mp.Source, 0o755); err != nil {
					return nil, fmt.Errorf("create bind source %s: %w", mp.Source, err)
				}
			} else if err != nil && mp.Spec != nil {
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid mount config for type \"bind\": bind source path does not exist: %s", mp.Source))
			}
			ms = append(ms, m)
		case mount.TypeVolume:
			p, err := d.volumes.Mount(mp.Name, c.ID)
			if err != nil {
				return nil, err
			}
			src := p
			if mp.Subpath != "" {
				sp, err := volumeSubpath(p, mp.Subpath)
				if err != nil {
					return nil, err
				}
				src = sp
			}
			if mp.CopyData {
				if err := volume.CopyUp(rootfs, mp.Destination, src); err != nil {
					return nil, fmt.Errorf("fill volume %s from the image: %w", mp.Name, err)
				}
			}
			o := []string{"rbind", "rprivate"}
			if !mp.RW {
				o = append(o, "ro")
			}
			ms = append(ms, specs.Mount{Destination: mp.Destination, Type: "bind", Source: src, Options: o})
		case mount.TypeTmpfs:
			o := []string{"nosuid", "nodev", "noexec"}
			if mp.TmpfsSize > 0 {
				o = append(o, fmt.Sprintf("size=%d", mp.TmpfsSize))
			}
			if mp.TmpfsMode != 0 {
				o = append(o, fmt.Sprintf("mode=%o", unixMode(mp.TmpfsMode)))
			}
			if !mp.RW {
				o = append(o, "ro")
			}
			ms = append(ms, specs.Mount{Destination: mp.Destination, Type: "tmpfs", Source: "tmpfs", Options: o})
		}
	}
	return ms, nil
}

// volumeSubpath resolves a volume's subpath as Docker does: beneath the
// volume's directory (openat2 RESOLVE_BENEATH: an absolute symlink or a
// ".." that leaves it is an error, not confined), and it must exist.
func volumeSubpath(base, sub string) (string, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, base, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_DIRECTORY})
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	sfd, err := unix.Openat2(fd, sub, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
	switch {
	case errors.Is(err, unix.EXDEV):
		return "", errdefs.InvalidParameter(fmt.Errorf("path concatenation escapes the base directory, base: %s, subpath: %s", base, sub))
	case err != nil:
		return "", errdefs.InvalidParameter(fmt.Errorf("cannot access path %s: %w", filepath.Join(base, sub), err))
	}
	defer unix.Close(sfd)
	// The path the kernel resolved, which the runtime binds.
	return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", sfd))
}

// bindSpecMount is a bind mount point's spec mount.
func bindSpecMount(mp *container.MountPoint) (specs.Mount, error) {
	m := specs.Mount{Source: mp.Source, Destination: mp.Destination, Type: "bind", Options: []string{"rbind"}}
	if mp.NonRecursive {
		m.Options = []string{"bind"}
	}
	if mp.Propagation != "" {
		m.Options = append(m.Options, string(mp.Propagation))
	}
	if !mp.RW {
		m.Options = append(m.Options, "ro")
		switch {
		case mp.ReadOnlyNonRecursive || mp.NonRecursive:
		case recursiveReadOnly():
			// Read-only all the way down, as Docker makes it (API 1.44+):
			// a host mount below the source must not stay writable.
			m.Options = append(m.Options, "rro")
		case mp.ReadOnlyForceRecursive:
			return m, errdefs.InvalidParameter(fmt.Errorf("recursive read-only mounts need a kernel with mount_setattr (5.12 or later)"))
		}
	} else {
		m.Options = append(m.Options, "rw")
	}
	return m, nil
}

// apiMountPoints is inspect's Mounts.
func apiMountPoints(mps []*container.MountPoint) []containertypes.MountPoint {
	out := []containertypes.MountPoint{}
	for _, mp := range mps {
		name := mp.Name
		if mp.Type == mount.TypeImage {
			// The image's ID, which the reference in Source may no
			// longer name (the CRI reports it as the mount's image ref).
			name = mp.ImageID
		}
		out = append(out, containertypes.MountPoint{
			Type: mp.Type, Name: name, Source: mp.Source, Destination: mp.Destination,
			Driver: mp.Driver, Mode: mp.Mode, RW: mp.RW, Propagation: mp.Propagation,
		})
	}
	return out
}

// The volume API (api/server/router/volume).

// VolumeCreate serves POST /volumes/create.
func (d *Daemon) VolumeCreate(ctx context.Context, opts volumetypes.CreateOptions) (*volumetypes.Volume, error) {
	v, err := d.volumes.Create(opts.Name, opts.Driver, opts.DriverOpts, opts.Labels)
	if err != nil {
		return nil, err
	}
	d.volumeEvent(v.Name, eventtypes.ActionCreate)
	return d.volumes.API(v), nil
}

// VolumeInspect serves GET /volumes/{name}.
func (d *Daemon) VolumeInspect(ctx context.Context, name string) (*volumetypes.Volume, error) {
	v, err := d.volumes.Get(name)
	if err != nil {
		return nil, err
	}
	return d.volumes.API(v), nil
}

// VolumeList serves GET /volumes.
func (d *Daemon) VolumeList(ctx context.Context, f filters.Args) (*volumetypes.ListResponse, error) {
	vs, err := d.volumes.List(f)
	if err != nil {
		return nil, err
	}
	resp := &volumetypes.ListResponse{Volumes: []*volumetypes.Volume{}, Warnings: []string{}}
	for _, v := range vs {
		resp.Volumes = append(resp.Volumes, d.volumes.API(v))
	}
	return resp, nil
}

// VolumeRemove serves DELETE /volumes/{name}.
func (d *Daemon) VolumeRemove(ctx context.Context, name string, force bool) error {
	if err := d.volumes.Remove(name, force); err != nil {
		return err
	}
	d.volumeEvent(name, eventtypes.ActionDestroy)
	return nil
}

// VolumesPrune serves POST /volumes/prune; all is the API before 1.42,
// which pruned named volumes too.
func (d *Daemon) VolumesPrune(ctx context.Context, f filters.Args, all bool) (*volumetypes.PruneReport, error) {
	names, freed, err := d.volumes.Prune(f, all)
	if err != nil {
		return nil, err
	}
	if names == nil {
		names = []string{}
	}
	for _, n := range names {
		d.volumeEvent(n, eventtypes.ActionDestroy)
	}
	return &volumetypes.PruneReport{VolumesDeleted: names, SpaceReclaimed: freed}, nil
}

// VolumesUsage is the volumes with their UsageData, for system df.
func (d *Daemon) VolumesUsage(ctx context.Context) ([]*volumetypes.Volume, error) {
	vs, err := d.volumes.List(filters.NewArgs())
	if err != nil {
		return nil, err
	}
	out := make([]*volumetypes.Volume, 0, len(vs))
	for _, v := range vs {
		a := d.volumes.API(v)
		size, refs := d.volumes.Usage(v.Name)
		a.UsageData = &volumetypes.UsageData{Size: size, RefCount: refs}
		out = append(out, a)
	}
	return out, nil
}

// unixMode is an os.FileMode's permission bits as chmod(2) takes them.
func unixMode(m os.FileMode) uint32 {
	v := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}

// applyRootfsPropagation makes the rootfs's propagation what the binds
// need, as Docker does: a shared bind needs a shared rootfs (rshared), a
// slave one at least a slave rootfs (rslave); otherwise a mount made on
// either side below the bind could not propagate. Docker also requires
// the source's own mount to be shared (or slave); the runtime's bind of a
// private source simply does not propagate.
func applyRootfsPropagation(c *container.Container, s *specs.Spec) {
	if s.Linux == nil {
		return
	}
	for _, mp := range mountPointsOf(c) {
		if mp.Type != mount.TypeBind {
			continue
		}
		switch mp.Propagation {
		case mount.PropagationShared, mount.PropagationRShared:
			s.Linux.RootfsPropagation = "rshared"
		case mount.PropagationSlave, mount.PropagationRSlave:
			if s.Linux.RootfsPropagation != "rshared" {
				s.Linux.RootfsPropagation = "rslave"
			}
		}
	}
}
