package hooks

import (
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Wrapper is how the daemon re-executes itself to run the hooks.
type Wrapper struct {
	Binary     string // the daemon binary; its main hands Command to Main
	ConfigPath string // the container's OCI config.json
	LogFile    string // where failures are logged (poststop ones only there)
}

// Args is the wrapper's command line for phase.
func (w Wrapper) Args(phase string, hooks []string) []string {
	return append([]string{w.Binary, Command, phase, w.ConfigPath, w.LogFile}, hooks...)
}

// Apply adds to spec the wrapper as an OCI createRuntime hook (run after
// the namespaces exist, before the user's process starts: the prestart
// point without the deprecated field) and as a poststop hook. Nothing is
// added without hooks, so a machine without hooks.d pays nothing.
func Apply(spec *specs.Spec, w Wrapper, hooks []string) {
	if len(hooks) == 0 {
		return
	}
	if spec.Hooks == nil {
		spec.Hooks = &specs.Hooks{}
	}
	spec.Hooks.CreateRuntime = append(spec.Hooks.CreateRuntime, w.ociHook(Prestart, hooks))
	spec.Hooks.Poststop = append(spec.Hooks.Poststop, w.ociHook(Poststop, hooks))
}

// ociHook gives libcontainer's own timeout room above the wrapper's
// per-hook ones: it only fires if the wrapper itself hangs.
func (w Wrapper) ociHook(phase string, hooks []string) specs.Hook {
	limit := int((time.Duration(len(hooks))*Timeout(phase) + 10*time.Second) / time.Second)
	return specs.Hook{
		Path:    w.Binary,
		Args:    w.Args(phase, hooks),
		Env:     []string{"container=docker"},
		Timeout: &limit,
	}
}
