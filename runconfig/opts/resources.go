package opts

import (
	"fmt"
	"math/big"
	"path"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	units "github.com/docker/go-units"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/runconfig"
)

// ParseMemory parses a docker memory size ("512m", "1g", "1048576"); the
// empty string means "no limit" (0). Units are binary, as in docker.
func ParseMemory(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := units.RAMInBytes(s)
	if err != nil {
		return 0, errdefs.InvalidParameter(fmt.Errorf("invalid size: '%s'", s))
	}
	if n < 0 {
		return 0, errdefs.InvalidParameter(fmt.Errorf("invalid size: '%s'", s))
	}
	return n, nil
}

// ParseMemorySwap parses --memory-swap: a size as for --memory, or -1 for
// unlimited swap; the empty string means "not set" (0).
func ParseMemorySwap(s string) (int64, error) {
	if s == "-1" {
		return -1, nil
	}
	return ParseMemory(s)
}

// ParseCPUs converts a --cpus value ("1.5") to NanoCPUs. A rational is used
// rather than a float so that "0.000000001" is exact and anything finer
// than a nano-CPU is refused instead of silently rounded.
func ParseCPUs(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, errdefs.InvalidParameter(fmt.Errorf("failed to parse %v as a rational number", s))
	}
	if r.Sign() < 0 {
		return 0, errdefs.InvalidParameter(fmt.Errorf("the number of CPUs must not be negative"))
	}
	nano := r.Mul(r, big.NewRat(1e9, 1))
	if !nano.IsInt() {
		return 0, errdefs.InvalidParameter(fmt.Errorf("value is too precise"))
	}
	if !nano.Num().IsInt64() {
		return 0, errdefs.InvalidParameter(fmt.Errorf("too large"))
	}
	return nano.Num().Int64(), nil
}

// ParseUlimits parses --ulimit name=soft[:hard] values.
func ParseUlimits(values []string) ([]*container.Ulimit, error) {
	var out []*container.Ulimit
	for _, v := range values {
		u, err := units.ParseUlimit(v)
		if err != nil {
			// As the docker CLI's flag parsing words it.
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid argument %q for \"--ulimit\" flag: %w", v, err))
		}
		out = append(out, u)
	}
	return out, nil
}

// ParseRestartPolicy parses --restart no|always|unless-stopped|on-failure[:N].
// The daemon validates the combination; here only the syntax is checked.
func ParseRestartPolicy(s string) (container.RestartPolicy, error) {
	var p container.RestartPolicy
	if s == "" {
		return p, nil
	}
	name, count, hasCount := strings.Cut(s, ":")
	p.Name = container.RestartPolicyMode(name)
	if hasCount {
		n, err := strconv.Atoi(count)
		if err != nil {
			return p, errdefs.InvalidParameter(fmt.Errorf("invalid restart policy format: maximum retry count must be an integer"))
		}
		p.MaximumRetryCount = n
	}
	switch p.Name {
	case container.RestartPolicyDisabled, container.RestartPolicyAlways, container.RestartPolicyUnlessStopped:
		if hasCount {
			return p, errdefs.InvalidParameter(fmt.Errorf("invalid restart policy format: maximum retry count can only be used with 'on-failure'"))
		}
	case container.RestartPolicyOnFailure:
	default:
		return p, errdefs.InvalidParameter(fmt.Errorf("invalid restart policy format: unknown policy '%s'", name))
	}
	return p, nil
}

// ParseTmpfs parses --tmpfs /path[:options] values into HostConfig.Tmpfs.
func ParseTmpfs(values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(values))
	for _, v := range values {
		dst, options, _ := strings.Cut(v, ":")
		if !strings.HasPrefix(dst, "/") {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid tmpfs mount '%s': destination must be an absolute path", v))
		}
		out[dst] = options
	}
	return out, nil
}

// ParseVolumes splits -v values into bind specs (host:ctr[:mode], sent as
// HostConfig.Binds) and anonymous volumes (a lone container path, sent as
// Config.Volumes), the way docker routes them.
func ParseVolumes(values []string) (binds []string, volumes map[string]struct{}, err error) {
	for _, v := range values {
		parts := strings.Split(v, ":")
		switch len(parts) {
		case 1:
			if !strings.HasPrefix(v, "/") {
				return nil, nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s': must be an absolute path", v))
			}
			if volumes == nil {
				volumes = map[string]struct{}{}
			}
			volumes[v] = struct{}{}
		case 2, 3:
			if parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
				return nil, nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s'", v))
			}
			binds = append(binds, v)
		default:
			return nil, nil, errdefs.InvalidParameter(fmt.Errorf("invalid volume specification: '%s'", v))
		}
	}
	return binds, volumes, nil
}

// ParseDevices parses --device values: HOST[:CONTAINER][:PERMISSIONS],
// PERMISSIONS a combination of r, w and m (default rwm), CONTAINER the
// host path when left out. HOST:PERMISSIONS is also read as Docker's CLI
// reads it. Errors are worded as that CLI's.
func ParseDevices(values []string) ([]container.DeviceMapping, error) {
	var out []container.DeviceMapping
	for _, v := range values {
		d, err := parseDevice(v)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid argument %q for \"--device\" flag: %w", v, err))
		}
		out = append(out, d)
	}
	return out, nil
}

func parseDevice(v string) (container.DeviceMapping, error) {
	parts := strings.Split(v, ":")
	if len(parts) > 3 || parts[0] == "" {
		return container.DeviceMapping{}, fmt.Errorf("bad format for path: %s", v)
	}
	d := container.DeviceMapping{PathOnHost: parts[0], PathInContainer: parts[0], CgroupPermissions: "rwm"}
	switch len(parts) {
	case 2:
		if runconfig.ValidDeviceMode(parts[1]) {
			d.CgroupPermissions = parts[1]
		} else {
			d.PathInContainer = parts[1]
		}
	case 3:
		if !runconfig.ValidDeviceMode(parts[2]) {
			return container.DeviceMapping{}, fmt.Errorf("bad mode specified: %s", parts[2])
		}
		d.PathInContainer, d.CgroupPermissions = parts[1], parts[2]
	}
	if !path.IsAbs(d.PathInContainer) {
		return container.DeviceMapping{}, fmt.Errorf("%s is not an absolute path", d.PathInContainer)
	}
	d.PathInContainer = path.Clean(d.PathInContainer)
	return d, nil
}
