// Package unitbind ties a container's systemd scope to a unit of the host
// (the label BindToLabel): the unit name's checks, the scope's properties,
// and finding the service a process runs in. It speaks no D-Bus, so the
// CLI can use it.
package unitbind

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sdengine/engine/pkg/errdefs"
)

// BindToLabel, on a container (`docker run --label
// io.sdengine.systemd.bind-to=web.service`), ties the container's scope
// to a systemd unit of the host: with the systemd cgroup driver the scope
// gets BindsTo= and Before= that unit (BindScopeProperties), so the
// container stops when the unit stops or dies. Our CLI sets it by itself
// when `docker run` runs in the foreground as a service's process
// (ServiceFromCgroup); an empty value turns that off.
const BindToLabel = "io.sdengine.systemd.bind-to"

// maxUnitNameLen is systemd's UNIT_NAME_MAX less the terminating NUL.
const maxUnitNameLen = 255

// unitTypes are the suffixes of systemd's unit types (unit_type_from_string).
var unitTypes = []string{
	".service", ".socket", ".target", ".device", ".mount", ".automount",
	".swap", ".timer", ".path", ".slice", ".scope",
}

// ValidateUnitName refuses what systemd would not take as a unit name
// (unit_name_is_valid, plain names and template instances): a prefix of
// [a-zA-Z0-9:_.\-] and at most one '@' followed by a non-empty instance,
// a known type suffix, 255 characters at most. A bare template
// ("foo@.service") is not a unit that runs, so it is refused too.
// The error is an InvalidParameter (400).
func ValidateUnitName(name string) error {
	bad := func(why string) error {
		return errdefs.InvalidParameter(fmt.Errorf("invalid systemd unit name %q: %s", name, why))
	}
	if name == "" {
		return bad("empty")
	}
	if len(name) > maxUnitNameLen {
		return bad(fmt.Sprintf("longer than %d characters", maxUnitNameLen))
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || !isUnitType(name[dot:]) {
		return bad("no unit type suffix (.service, .scope, .target, ...)")
	}
	base := name[:dot]
	prefix, instance, templated := strings.Cut(base, "@")
	if prefix == "" {
		return bad("empty name before the suffix")
	}
	if templated && instance == "" {
		return bad("a template, not an instance")
	}
	for _, part := range []string{prefix, instance} {
		for i := 0; i < len(part); i++ {
			if !unitNameChar(part[i]) {
				return bad(fmt.Sprintf("character %q not allowed", part[i]))
			}
		}
	}
	return nil
}

func isUnitType(suffix string) bool {
	for _, t := range unitTypes {
		if suffix == t {
			return true
		}
	}
	return false
}

// unitNameChar is systemd's VALID_CHARS for unit names ('@' is checked
// apart: one only).
func unitNameChar(c byte) bool {
	return isAlnum(c) || strings.IndexByte(":-_.\\", c) >= 0
}

// ServiceFromCgroup finds the service a process runs in from the text of
// its /proc/PID/cgroup: the cgroup2 line ("0::/system.slice/web.service")
// when there is one, else the name=systemd one (a v1 host), and in that
// path the innermost component that is a valid ".service" unit name (a
// service with Delegate=yes may have put the process in a group below
// its own). A session scope, a slice, or no systemd at all give "".
//
// The path is as the process's cgroup namespace shows it: a process in a
// container sees its container's units, not the host's, so callers must
// not use this inside a container.
func ServiceFromCgroup(procCgroup string) string {
	var v2, v1 string
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case parts[1] == "name=systemd":
			v1 = parts[2]
		}
	}
	p := v2
	// On a hybrid host systemd keeps the cgroup2 tree in step with
	// name=systemd; on a v1 host without it the cgroup2 line is "/" or
	// absent.
	if p == "" || p == "/" {
		p = v1
	}
	comps := strings.Split(strings.Trim(p, "/"), "/")
	for i := len(comps) - 1; i >= 0; i-- {
		c := comps[i]
		if strings.HasSuffix(c, ".service") && ValidateUnitName(c) == nil {
			return c
		}
	}
	return ""
}

// Scope properties, as the OCI spec's annotations that libcontainer passes
// to systemd when it creates the container's scope (StartTransientUnit).
const (
	scopePropertyPrefix = "org.systemd.property."
	// ScopeBindsToAnnotation: the scope is stopped when the unit stops,
	// also when the unit goes inactive by itself (its main process killed).
	ScopeBindsToAnnotation = scopePropertyPrefix + "BindsTo"
	// ScopeBeforeAnnotation orders the scope before the unit: on a stop of
	// both, the unit stops first (the reverse of start order), so the
	// unit's own stop (our CLI's `docker stop`) runs before systemd stops
	// the scope. After= instead would make the scope's start wait for
	// the unit's start job, which for a Type=notify unit waits for the
	// container's READY=1: a deadlock.
	ScopeBeforeAnnotation = scopePropertyPrefix + "Before"
	// ScopeTimeoutStopAnnotation is how long systemd waits after the
	// scope's KillSignal before SIGKILL (libcontainer turns ...Sec into
	// ...USec).
	ScopeTimeoutStopAnnotation = scopePropertyPrefix + "TimeoutStopSec"
)

// BindScopeProperties are the annotations that bind a container's scope
// to unit (already valid: ValidateUnitName): BindsTo= and Before= the
// unit, and, when stopTimeout >= 0, the scope's TimeoutStopSec= in
// seconds (the container's stop timeout, instead of systemd's 90 s
// default; a negative one, "wait for ever" in Docker, leaves systemd's).
func BindScopeProperties(unit string, stopTimeout int) map[string]string {
	// The values are GVariant text (libcontainer parses them with
	// godbus's ParseVariant): an array of strings. A unit name holds no
	// quote; its backslashes are escaped.
	list := `["` + strings.ReplaceAll(unit, `\`, `\\`) + `"]`
	a := map[string]string{
		ScopeBindsToAnnotation: list,
		ScopeBeforeAnnotation:  list,
	}
	switch {
	case stopTimeout > 0:
		a[ScopeTimeoutStopAnnotation] = strconv.Itoa(stopTimeout)
	case stopTimeout == 0:
		// Docker's 0 is SIGKILL at once; systemd's 0 would be no
		// timeout at all. A millisecond (a GVariant double, which
		// libcontainer converts too) is the nearest.
		a[ScopeTimeoutStopAnnotation] = "0.001"
	}
	return a
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
