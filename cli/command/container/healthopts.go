package container

import (
	"errors"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/spf13/pflag"
)

// healthOptions are run/create's --health-* flags and --no-healthcheck.
type healthOptions struct {
	cmd                                           string
	interval, timeout, startPeriod, startInterval time.Duration
	retries                                       int
	none                                          bool
}

func (h *healthOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&h.cmd, "health-cmd", "", "Command to run to check health")
	fs.DurationVar(&h.interval, "health-interval", 0, "Time between running the check (ms|s|m|h) (default 0s)")
	fs.DurationVar(&h.timeout, "health-timeout", 0, "Maximum time to allow one check to run (ms|s|m|h) (default 0s)")
	fs.DurationVar(&h.startPeriod, "health-start-period", 0, "Start period for the container to initialize before starting health-retries countdown (ms|s|m|h) (default 0s)")
	fs.DurationVar(&h.startInterval, "health-start-interval", 0, "Time between running the check during the start period (ms|s|m|h) (default 0s)")
	fs.IntVar(&h.retries, "health-retries", 0, "Consecutive failures needed to report unhealthy")
	fs.BoolVar(&h.none, "no-healthcheck", false, "Disable any container-specified HEALTHCHECK")
}

// config is the HealthConfig the flags ask for (nil: the image's).
func (h *healthOptions) config() (*container.HealthConfig, error) {
	given := h.cmd != "" || h.interval != 0 || h.timeout != 0 || h.startPeriod != 0 || h.startInterval != 0 || h.retries != 0
	if h.none {
		if given {
			return nil, errors.New("--no-healthcheck conflicts with --health-* options")
		}
		return &container.HealthConfig{Test: []string{"NONE"}}, nil
	}
	if !given {
		return nil, nil
	}
	hc := &container.HealthConfig{
		Interval: h.interval, Timeout: h.timeout, StartPeriod: h.startPeriod, StartInterval: h.startInterval, Retries: h.retries,
	}
	if h.cmd != "" {
		hc.Test = []string{"CMD-SHELL", h.cmd}
	}
	if h.retries < 0 {
		return nil, errors.New("--health-retries cannot be negative")
	}
	return hc, nil
}
