package oci

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/pkg/errdefs"
)

type securityOpts struct {
	noNewPrivileges   bool
	seccompUnconfined bool
	seccompBuiltin    bool   // seccomp=builtin: the default profile, asked for by name
	seccompProfile    string // JSON body of a custom profile
	// writableCgroups is --security-opt writable-cgroups[=BOOL]; nil when
	// not given (the cgroup mount is then writable only for --privileged).
	writableCgroups *bool
}

// ValidateSecurityOpts refuses, at create, the --security-opt values Build
// would refuse at start, with Docker's messages.
func ValidateSecurityOpts(opts []string) error {
	_, err := parseSecurityOpts(opts)
	return err
}

// parseSecurityOpts understands the --security-opt values this engine
// implements, spelled as Docker takes them: "key=value", the legacy
// "key:value", and the bare flags no-new-privileges and writable-cgroups.
// The CLI sends "seccomp=<profile JSON>" with the file's content; a path
// to a file is accepted too for API clients.
func parseSecurityOpts(opts []string) (securityOpts, error) {
	var so securityOpts
	boolOpt := func(opt, val string) (bool, error) {
		b, err := strconv.ParseBool(val)
		if err != nil {
			return false, errdefs.InvalidParameter(fmt.Errorf("invalid --security-opt 2: %q", opt))
		}
		return b, nil
	}
	for _, opt := range opts {
		switch opt {
		case "no-new-privileges":
			so.noNewPrivileges = true
			continue
		case "writable-cgroups":
			so.writableCgroups = ptr(true)
			continue
		case "disable":
			// SELinux labelling off: there is no labelling to turn off.
			continue
		}
		key, val, ok := strings.Cut(opt, "=")
		if !ok {
			key, val, ok = strings.Cut(opt, ":")
		}
		if !ok {
			return so, errdefs.InvalidParameter(fmt.Errorf("invalid --security-opt 1: %q", opt))
		}
		switch key {
		case "no-new-privileges":
			b, err := boolOpt(opt, val)
			if err != nil {
				return so, err
			}
			so.noNewPrivileges = b
		case "writable-cgroups":
			b, err := boolOpt(opt, val)
			if err != nil {
				return so, err
			}
			so.writableCgroups = &b
		case "seccomp":
			so.seccompUnconfined, so.seccompBuiltin, so.seccompProfile = false, false, ""
			switch {
			case val == "unconfined":
				so.seccompUnconfined = true
			case val == "builtin":
				so.seccompBuiltin = true
			case val == "":
				// Docker's reading of an empty value: the default profile.
			case strings.HasPrefix(strings.TrimSpace(val), "{"):
				so.seccompProfile = val
			default:
				b, err := os.ReadFile(val)
				if err != nil {
					return so, errdefs.InvalidParameter(fmt.Errorf("opening seccomp profile (%s) failed: %w", val, err))
				}
				so.seccompProfile = string(b)
			}
		case "apparmor", "label":
			slog.Info("ignoring unsupported security option", "opt", opt)
		default:
			return so, errdefs.InvalidParameter(fmt.Errorf("invalid --security-opt 2: %q", opt))
		}
	}
	return so, nil
}

// setSeccomp applies the profile: a user's profile always (for
// --privileged too, as in Docker: it is asked for by name), the default
// profile unless the container is unconfined or privileged.
func setSeccomp(s *specs.Spec, so securityOpts, privileged bool) error {
	switch {
	case so.seccompUnconfined:
		return nil
	case so.seccompProfile != "":
		p, err := seccomp.LoadProfile(so.seccompProfile, s)
		if err != nil {
			return errdefs.InvalidParameter(fmt.Errorf("loading seccomp profile: %w", err))
		}
		s.Linux.Seccomp = p
	case privileged && !so.seccompBuiltin:
		return nil
	default:
		p, err := seccomp.GetDefaultProfile(s)
		if err != nil {
			return fmt.Errorf("default seccomp profile: %w", err)
		}
		p.Architectures = withoutX32(p.Architectures)
		s.Linux.Seccomp = p
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// withoutX32 drops the x32 ABI from the default profile's architectures.
// Every architecture multiplies the work libseccomp does to compile the
// filter, which happens at every container start and every exec (about
// 20 ms each here); x32 binaries practically do not exist, and mainstream
// kernels ship with the x32 ABI off. Its system calls are then refused
// (EPERM, the profile's default action) rather than filtered: stricter,
// not looser.
func withoutX32(archs []specs.Arch) []specs.Arch {
	out := archs[:0:0]
	for _, a := range archs {
		if a != specs.ArchX32 {
			out = append(out, a)
		}
	}
	return out
}

// normalizeCap turns "net_admin", "NET_ADMIN" or "CAP_NET_ADMIN" into
// "CAP_NET_ADMIN"; "ALL" stays "ALL".
func normalizeCap(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	if c == "ALL" || strings.HasPrefix(c, "CAP_") {
		return c
	}
	return "CAP_" + c
}

func knownCap(c string) bool {
	for _, k := range allCapabilities {
		if k == c {
			return true
		}
	}
	return false
}

// tweakCapabilities applies --cap-add and --cap-drop to base the way
// Docker does: "ALL" in add grants everything, "ALL" in drop starts from
// nothing, and an explicit add wins over a drop of the same capability.
func tweakCapabilities(base, add, drop []string) ([]string, error) {
	norm := func(list []string) ([]string, bool, error) {
		var out []string
		all := false
		for _, c := range list {
			n := normalizeCap(c)
			if n == "ALL" {
				all = true
				continue
			}
			if !knownCap(n) {
				return nil, false, errdefs.InvalidParameter(fmt.Errorf("unknown capability: %q", c))
			}
			out = append(out, n)
		}
		return out, all, nil
	}
	addList, addAll, err := norm(add)
	if err != nil {
		return nil, err
	}
	dropList, dropAll, err := norm(drop)
	if err != nil {
		return nil, err
	}
	if addAll {
		return append([]string(nil), allCapabilities...), nil
	}
	set := map[string]bool{}
	if !dropAll {
		for _, c := range base {
			set[c] = true
		}
		for _, c := range dropList {
			delete(set, c)
		}
	}
	for _, c := range addList {
		set[c] = true
	}
	// Keep the kernel's numbering order so that specs are deterministic.
	var out []string
	for _, c := range allCapabilities {
		if set[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

// DefaultSeccomp reports whether securityOpt leaves a container with the
// daemon's default seccomp profile (no seccomp= option of its own).
func DefaultSeccomp(securityOpt []string) bool {
	so, err := parseSecurityOpts(securityOpt)
	return err == nil && !so.seccompUnconfined && so.seccompProfile == ""
}
