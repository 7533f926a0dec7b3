// Package logger chooses a container's log driver: the shim writes through
// it, and the daemon reads back through it for `docker logs`.
package logger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sdengine/engine/daemon/logger/crilog"
	"github.com/sdengine/engine/daemon/logger/journald"
	"github.com/sdengine/engine/daemon/logger/jsonfilelog"
	"github.com/sdengine/engine/daemon/logger/local"
	"github.com/sdengine/engine/daemon/logger/logfile"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Info is what a driver may need to know of the container it logs for.
// It travels from the daemon to the shim as JSON.
type Info struct {
	Driver        string            `json:"driver"`
	Config        map[string]string `json:"config,omitempty"`
	LogPath       string            `json:"logPath,omitempty"` // json-file and local
	ContainerID   string            `json:"containerID"`
	ContainerName string            `json:"containerName"` // without the leading "/"
	ImageName     string            `json:"imageName"`
	ImageID       string            `json:"imageID"`
	Labels        map[string]string `json:"labels,omitempty"`
	Env           []string          `json:"env,omitempty"`
	Created       time.Time         `json:"created"`
}

// Logger receives a container's output.
type Logger interface {
	// StreamWriter returns a writer for "stdout" or "stderr"; closing it
	// flushes a partial last line.
	StreamWriter(stream string) io.WriteCloser
	Close() error
}

// Reopener is a Logger whose file can be moved away by someone else (the
// kubelet rotates a cri log by renaming it): Reopen makes it write to a
// new file at its path, losing and repeating nothing.
type Reopener interface {
	Reopen() error
}

// Message and ReadOptions are what reading gives and takes.
type (
	Message     = logfile.Message
	ReadOptions = logfile.ReadOptions
)

// driver is one log driver's entry points.
type driver struct {
	validate func(opts map[string]string) error
	create   func(info Info) (Logger, error)
	// read is nil for drivers that cannot be read back.
	read func(ctx context.Context, info Info, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error
	// reopens: its Logger is a Reopener. The daemon, which holds no
	// Logger (the shim does), asks this before it asks the shim.
	reopens bool
}

var drivers = map[string]driver{
	"none": {
		validate: func(opts map[string]string) error {
			if len(opts) > 0 {
				return errdefs.InvalidParameter(fmt.Errorf("log driver none takes no options"))
			}
			return nil
		},
		create: func(Info) (Logger, error) { return nil, nil },
	},
	"json-file": {
		validate: jsonfilelog.ValidateOptions,
		create: func(info Info) (Logger, error) {
			w, err := jsonfilelog.New(info.LogPath, info.Config)
			if err != nil {
				return nil, err
			}
			return w, nil
		},
		read: func(ctx context.Context, info Info, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
			return jsonfilelog.Read(ctx, info.LogPath, opts, done, fn)
		},
	},
	"local": {
		validate: local.ValidateOptions,
		create: func(info Info) (Logger, error) {
			// Docker keeps the local driver's files in a directory of
			// their own, made when the log is first opened.
			if err := os.MkdirAll(filepath.Dir(info.LogPath), 0o700); err != nil {
				return nil, fmt.Errorf("create local log directory: %w", err)
			}
			w, err := local.New(info.LogPath, info.Config)
			if err != nil {
				return nil, err
			}
			return w, nil
		},
		read: func(ctx context.Context, info Info, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
			return local.Read(ctx, info.LogPath, opts, done, fn)
		},
	},
	"cri": {
		validate: crilog.ValidateOptions,
		create: func(info Info) (Logger, error) {
			w, err := crilog.New(info.Config)
			if err != nil {
				return nil, err
			}
			return w, nil
		},
		read: func(ctx context.Context, info Info, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
			p, err := crilog.Path(info.Config)
			if err != nil {
				return err
			}
			return crilog.Read(ctx, p, opts, done, fn)
		},
		reopens: true,
	},
	"journald": {
		validate: journald.ValidateOptions,
		create: func(info Info) (Logger, error) {
			l, err := journald.New(journald.Container{
				ID: info.ContainerID, Name: info.ContainerName,
				ImageName: info.ImageName, ImageID: info.ImageID,
				Labels: info.Labels, Env: info.Env,
			}, info.Config)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		read: func(ctx context.Context, info Info, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
			return journald.Read(ctx, info.ContainerID, opts, done, fn)
		},
	},
}

// LocalLogPath is where the local driver keeps a container's log, below
// the container's directory: Docker's place, so that either engine finds
// the other's files.
func LocalLogPath(containerDir string) string {
	return filepath.Join(containerDir, "local-logs", "container.log")
}

// Names lists the drivers this engine has, sorted.
func Names() []string {
	out := make([]string, 0, len(drivers))
	for n := range drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func lookup(name string) (driver, error) {
	d, ok := drivers[name]
	if !ok {
		return driver{}, errdefs.InvalidParameter(fmt.Errorf("logger: no log driver named '%s' is registered", name))
	}
	return d, nil
}

// Validate checks a driver name and its options.
func Validate(name string, opts map[string]string) error {
	d, err := lookup(name)
	if err != nil {
		return err
	}
	return d.validate(opts)
}

// New opens the driver for a container; "none" (or no driver at all)
// gives a nil Logger.
func New(info Info) (Logger, error) {
	if info.Driver == "" {
		return nil, nil
	}
	d, err := lookup(info.Driver)
	if err != nil {
		return nil, err
	}
	return d.create(info)
}

// Read streams a container's log back, if its driver can.
func Read(ctx context.Context, info Info, opts ReadOptions, done <-chan struct{}, fn func(Message) error) error {
	d, err := lookup(info.Driver)
	if err != nil {
		return err
	}
	if d.read == nil {
		return errdefs.InvalidParameter(fmt.Errorf("configured logging driver does not support reading: %s", info.Driver))
	}
	return d.read(ctx, info, opts, done, fn)
}

// CheckReadable fails for drivers whose logs cannot be read back.
func CheckReadable(name string) error {
	d, err := lookup(name)
	if err != nil {
		return err
	}
	if d.read == nil {
		return errdefs.InvalidParameter(fmt.Errorf("configured logging driver does not support reading: %s", name))
	}
	return nil
}

// CheckReopenable fails, NotImplemented, for drivers whose Logger is not a
// Reopener: only a file someone else rotates needs reopening.
func CheckReopenable(name string) error {
	d, err := lookup(name)
	if err != nil {
		return err
	}
	if !d.reopens {
		return errdefs.NotImplemented(fmt.Errorf("log driver %s cannot reopen its log (only cri can)", name))
	}
	return nil
}

// Reopen reopens l's file, if l is a Reopener.
func Reopen(l Logger) error {
	r, ok := l.(Reopener)
	if !ok {
		return errdefs.NotImplemented(errors.New("the container's log driver cannot reopen its log"))
	}
	return r.Reopen()
}
