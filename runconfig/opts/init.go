package opts

import (
	"fmt"
	"strconv"

	"github.com/sdengine/engine/pkg/errdefs"
)

// InitSystemd is the Config.Init value asking the engine to run the image's
// own systemd as PID 1 (with the mounts and signals systemd expects),
// instead of docker's tiny reaper.
const InitSystemd = "systemd"

// InitFlagNoOptDefVal is the value a bare --init stands for; register the
// flag with this NoOptDefVal so both "--init" and "--init=systemd" parse.
const InitFlagNoOptDefVal = "true"

// InitOption is the pflag.Value behind --init. docker's --init is a bool
// (HostConfig.Init, a reaper); this engine also accepts --init=systemd,
// which is carried in Config.Init instead.
type InitOption struct {
	set    bool
	reaper bool   // HostConfig.Init
	mode   string // Config.Init
}

// String implements pflag.Value.
func (o *InitOption) String() string {
	switch {
	case o == nil || !o.set:
		return "false"
	case o.mode != "":
		return o.mode
	default:
		return strconv.FormatBool(o.reaper)
	}
}

// Set implements pflag.Value.
func (o *InitOption) Set(s string) error {
	if s == InitSystemd {
		o.set, o.reaper, o.mode = true, false, InitSystemd
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid --init value %q: want true, false or %s", s, InitSystemd))
	}
	o.set, o.reaper, o.mode = true, b, ""
	return nil
}

// Type implements pflag.Value; "string" keeps the help text honest about
// the value form.
func (o *InitOption) Type() string { return "string" }

// HostConfigInit is the value for HostConfig.Init: nil when --init was not
// given (daemon default), else whether a reaper is wanted.
func (o *InitOption) HostConfigInit() *bool {
	if o == nil || !o.set || o.mode != "" {
		return nil
	}
	b := o.reaper
	return &b
}

// ConfigInit is the value for Config.Init ("" or "systemd").
func (o *InitOption) ConfigInit() string {
	if o == nil {
		return ""
	}
	return o.mode
}
