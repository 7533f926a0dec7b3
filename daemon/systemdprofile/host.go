package systemdprofile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sdengine/engine/pkg/systemd"
)

// systemd's Container Interface (systemd.io/CONTAINER_INTERFACE): the
// /run/host hierarchy, the container_host_* variables and the capabilities
// not to pass.

// ContainerManager is what the container's $container and
// /run/host/container-manager say.
const ContainerManager = "docker"

// RunHost is where the interface's files are, in the container.
const RunHost = "/run/host"

// hostOSReleaseFiles are the host's os-release, in os-release(5)'s order.
var hostOSReleaseFiles = []string{"/etc/os-release", "/usr/lib/os-release"}

// hostIDFields are os-release's identifying fields, passed as
// container_host_<lower-case key> as the interface asks (systemd-nspawn
// passes the same six).
var hostIDFields = []string{"ID", "VERSION_ID", "BUILD_ID", "VARIANT_ID", "IMAGE_ID", "IMAGE_VERSION"}

// auditCaps are the capabilities the interface says not to pass: audit is
// not namespaced, and a systemd that has them assumes audit works and its
// components then fail; without them it makes no attempt.
var auditCaps = []string{"CAP_AUDIT_CONTROL", "CAP_AUDIT_READ", "CAP_AUDIT_WRITE"}

// prepareRunHost writes the container's /run/host into a directory of its
// state directory, bound read-only by Apply: copies, never the host's own
// files, so that even a container that may remount (--privileged) writes
// only its copy. It returns the directory and the container_host_*
// variables of the host's os-release.
func prepareRunHost(r Rootfs) (dir string, env []string, err error) {
	dir = RunHostDir(r.StateDir)
	// A restart rewrites it: the host may have been upgraded meanwhile.
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, fmt.Errorf("run/host: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("run/host: %w", err)
	}
	files := map[string]string{
		"container-manager": ContainerManager + "\n",
		"container-uuid":    systemd.UUID(r.MachineID) + "\n",
	}
	if osr, ok := readHostOSRelease(r.HostOSRelease); ok {
		files["os-release"] = string(osr)
		env = hostEnv(osr)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o444); err != nil {
			return "", nil, fmt.Errorf("run/host: %w", err)
		}
	}
	return dir, env, nil
}

// RunHostDir is the directory bound at /run/host, in a container's state
// directory: the daemon's notify socket is made there too.
func RunHostDir(stateDir string) string { return filepath.Join(stateDir, "run-host") }

// readHostOSRelease reads the host's os-release: path, or the first of
// hostOSReleaseFiles that exists. A host without one gets no os-release
// file and no variables, as the interface allows.
func readHostOSRelease(path string) ([]byte, bool) {
	paths := hostOSReleaseFiles
	if path != "" {
		paths = []string{path}
	}
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return b, true
		}
	}
	return nil, false
}

// hostEnv turns os-release's identifying fields into container_host_*
// variables, in hostIDFields' order.
func hostEnv(osRelease []byte) []string {
	vals := parseOSRelease(osRelease)
	var env []string
	for _, k := range hostIDFields {
		if v, ok := vals[k]; ok && v != "" {
			env = append(env, "container_host_"+strings.ToLower(k)+"="+v)
		}
	}
	return env
}

// parseOSRelease reads os-release(5)'s KEY=VALUE lines: values may be in
// double or single quotes, and in double quotes a backslash escapes $ " \
// and `; comments and lines without '=' are skipped.
func parseOSRelease(b []byte) map[string]string {
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			continue
		}
		vals[k] = unquote(v)
	}
	return vals
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
		var sb strings.Builder
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$\"\\`", v[i+1]) >= 0 {
				i++
			}
			sb.WriteByte(v[i])
		}
		return sb.String()
	}
	return v
}

// RunHostMount binds the prepared directory read-only at /run/host, after
// the /run tmpfs (Apply sorts parents first); the interface wants the
// hierarchy immutable for the container. The daemon binds one for the
// notify socket of a container without the profile too.
func RunHostMount(dir string) specs.Mount {
	return specs.Mount{Destination: RunHost, Type: "bind", Source: dir, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}}
}

// addEnv appends kv unless the user set its key: the user's value wins.
func addEnv(env []string, kv ...string) []string {
	for _, e := range kv {
		key, _, _ := strings.Cut(e, "=")
		if !slices.ContainsFunc(env, func(x string) bool { return strings.HasPrefix(x, key+"=") }) {
			env = append(env, e)
		}
	}
	return env
}

// dropAuditCaps removes the audit capabilities from every set, except
// those the user asked for by name (keep, with or without "CAP_").
func dropAuditCaps(c *specs.LinuxCapabilities, keep []string) {
	if c == nil {
		return
	}
	drop := slices.DeleteFunc(slices.Clone(auditCaps), func(cp string) bool {
		return slices.ContainsFunc(keep, func(k string) bool {
			k = strings.ToUpper(k)
			return k == cp || "CAP_"+k == cp
		})
	})
	for _, set := range []*[]string{&c.Bounding, &c.Effective, &c.Permitted, &c.Inheritable, &c.Ambient} {
		*set = slices.DeleteFunc(*set, func(cp string) bool { return slices.Contains(drop, cp) })
	}
}
