package container

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/runconfig/opts"
	"github.com/spf13/pflag"
)

// containerOptions are the flags shared by "create" and "run".
type containerOptions struct {
	env, envFile, labels, labelFile []string
	workdir, user, name, hostname   string
	entrypoint                      string
	stopSignal                      string
	stopTimeout                     int
	interactive, tty                bool
	attach                          []string
	network                         string
	memory, memorySwap, cpus        string
	cpuShares                       int64
	cpusetCpus, cpusetMems          string
	pidsLimit                       int64
	blkioWeight                     uint16
	privileged, readOnly            bool
	capAdd, capDrop, securityOpt    []string
	groupAdd                        []string
	tmpfs, volumes                  []string
	init                            opts.InitOption
	logDriver                       string
	logOpts                         []string
	restart                         string
	ulimits                         []string
	devices, deviceCgroupRules      []string
	cgroupParent, cgroupns, userns  string
	annotations                     []string
	memoryReservation, gpus         string
	oomScoreAdj                     int
	oomKillDisable                  bool
	ipc, pid, uts, shmSize          string
	net                             networkOptions
	mounts, volumesFrom             []string
	health                          healthOptions
}

func (o *containerOptions) addFlags(fs *pflag.FlagSet) {
	// -h is --hostname here, so --help must exist before cobra adds "-h".
	fs.Bool("help", false, "Print usage")
	fs.StringArrayVarP(&o.env, "env", "e", nil, "Set environment variables")
	fs.StringArrayVar(&o.envFile, "env-file", nil, "Read in a file of environment variables")
	fs.StringArrayVarP(&o.labels, "label", "l", nil, "Set meta data on a container")
	fs.StringArrayVar(&o.labelFile, "label-file", nil, "Read in a line delimited file of labels")
	fs.StringVarP(&o.workdir, "workdir", "w", "", "Working directory inside the container")
	fs.StringVarP(&o.user, "user", "u", "", "Username or UID (format: <name|uid>[:<group|gid>])")
	fs.StringVar(&o.name, "name", "", "Assign a name to the container")
	fs.StringVarP(&o.hostname, "hostname", "h", "", "Container host name")
	fs.StringVar(&o.entrypoint, "entrypoint", "", "Overwrite the default ENTRYPOINT of the image")
	fs.StringVar(&o.stopSignal, "stop-signal", "", "Signal to stop the container")
	fs.IntVar(&o.stopTimeout, "stop-timeout", 0, "Timeout (in seconds) to stop a container")
	fs.BoolVarP(&o.interactive, "interactive", "i", false, "Keep STDIN open even if not attached")
	fs.BoolVarP(&o.tty, "tty", "t", false, "Allocate a pseudo-TTY")
	fs.StringSliceVarP(&o.attach, "attach", "a", nil, "Attach to STDIN, STDOUT or STDERR")
	fs.StringVar(&o.network, "network", "default", "Connect a container to a network (none, host, default, NAME)")
	o.net.addFlags(fs)
	fs.StringVar(&o.network, "net", "default", "Connect a container to a network")
	_ = fs.MarkHidden("net")
	fs.StringVarP(&o.memory, "memory", "m", "", "Memory limit")
	fs.StringVar(&o.memorySwap, "memory-swap", "", "Swap limit equal to memory plus swap: '-1' to enable unlimited swap")
	fs.StringVar(&o.cpus, "cpus", "", "Number of CPUs")
	fs.Int64VarP(&o.cpuShares, "cpu-shares", "c", 0, "CPU shares (relative weight)")
	fs.StringVar(&o.cpusetCpus, "cpuset-cpus", "", "CPUs in which to allow execution (0-3, 0,1)")
	fs.StringVar(&o.cpusetMems, "cpuset-mems", "", "MEMs in which to allow execution (0-3, 0,1)")
	fs.Int64Var(&o.pidsLimit, "pids-limit", 0, "Tune container pids limit (set -1 for unlimited)")
	fs.Uint16Var(&o.blkioWeight, "blkio-weight", 0, "Block IO (relative weight), between 10 and 1000, or 0 to disable (default 0)")
	fs.BoolVar(&o.privileged, "privileged", false, "Give extended privileges to this container")
	fs.BoolVar(&o.readOnly, "read-only", false, "Mount the container's root filesystem as read only")
	fs.StringArrayVar(&o.capAdd, "cap-add", nil, "Add Linux capabilities")
	fs.StringArrayVar(&o.capDrop, "cap-drop", nil, "Drop Linux capabilities")
	fs.StringArrayVar(&o.securityOpt, "security-opt", nil, "Security Options")
	fs.StringArrayVar(&o.groupAdd, "group-add", nil, "Add additional groups to join")
	fs.StringArrayVar(&o.tmpfs, "tmpfs", nil, "Mount a tmpfs directory")
	fs.StringArrayVarP(&o.volumes, "volume", "v", nil, "Bind mount a volume")
	fs.StringArrayVar(&o.mounts, "mount", nil, "Attach a filesystem mount to the container")
	fs.StringArrayVar(&o.volumesFrom, "volumes-from", nil, "Mount volumes from the specified container(s)")
	fs.Var(&o.init, "init", "Run an init inside the container (--init: reaper; --init=systemd: the image's systemd as PID 1)")
	fs.Lookup("init").NoOptDefVal = opts.InitFlagNoOptDefVal
	fs.StringVar(&o.logDriver, "log-driver", "", "Logging driver for the container")
	fs.StringArrayVar(&o.logOpts, "log-opt", nil, "Log driver options")
	fs.StringVar(&o.restart, "restart", "no", "Restart policy to apply when a container exits")
	fs.StringArrayVar(&o.ulimits, "ulimit", nil, "Ulimit options")
	fs.StringArrayVar(&o.devices, "device", nil, "Add a host device to the container (HOST[:CONTAINER][:PERMISSIONS], permissions r, w, m)")
	fs.StringArrayVar(&o.deviceCgroupRules, "device-cgroup-rule", nil, `Add a rule to the cgroup allowed devices list ("c|b|a MAJOR:MINOR rwm", * for any number)`)
	fs.StringVar(&o.gpus, "gpus", "", "GPU devices to add to the container ('all' to pass all GPUs; refused: this engine has no GPU driver)")
	fs.StringVar(&o.cgroupParent, "cgroup-parent", "", "Optional parent cgroup for the container")
	fs.StringVar(&o.cgroupns, "cgroupns", "", `Cgroup namespace to use ("private": the container's own; "host" is refused by this engine)`)
	fs.StringVar(&o.userns, "userns", "", "User namespace to use (host)")
	fs.StringArrayVar(&o.annotations, "annotation", nil, "Add an annotation to the container (KEY=VALUE; kept in its record, io.sdengine.cgroup-layout is read by the engine)")
	fs.StringVar(&o.memoryReservation, "memory-reservation", "", "Memory soft limit")
	fs.IntVar(&o.oomScoreAdj, "oom-score-adj", 0, "Tune host's OOM preferences (-1000 to 1000)")
	fs.BoolVar(&o.oomKillDisable, "oom-kill-disable", false, "Disable OOM Killer (cgroup v1 only)")
	fs.StringVar(&o.ipc, "ipc", "", "IPC mode to use (none, private, shareable, host, container:<name|id>)")
	fs.StringVar(&o.pid, "pid", "", "PID namespace to use (host, container:<name|id>)")
	fs.StringVar(&o.uts, "uts", "", "UTS namespace to use (host)")
	fs.StringVar(&o.shmSize, "shm-size", "", "Size of /dev/shm (default 64MB)")
	o.health.addFlags(fs)
}

// parsed is the create request built from the flags.
type parsed struct {
	config  *opts.ContainerConfig
	host    *container.HostConfig
	network *network.NetworkingConfig
}

// parse builds the create request; fs tells which flags were given (for
// --entrypoint "" and --stop-timeout). args are IMAGE [COMMAND [ARG...]].
func (o *containerOptions) parse(fs *pflag.FlagSet, args []string) (*parsed, error) {
	env, err := opts.BuildEnv(o.envFile, o.env)
	if err != nil {
		return nil, err
	}
	labels, err := opts.BuildLabels(o.labelFile, o.labels)
	if err != nil {
		return nil, err
	}
	mem, err := opts.ParseMemory(o.memory)
	if err != nil {
		return nil, flagError("-m, --memory", o.memory, err)
	}
	shmSize, err := opts.ParseMemory(o.shmSize)
	if err != nil {
		return nil, flagError("--shm-size", o.shmSize, err)
	}
	swap, err := opts.ParseMemorySwap(o.memorySwap)
	if err != nil {
		return nil, flagError("--memory-swap", o.memorySwap, err)
	}
	nano, err := opts.ParseCPUs(o.cpus)
	if err != nil {
		return nil, flagError("--cpus", o.cpus, err)
	}
	if nano == 0 && fs.Changed("cpus") {
		// NanoCPUs 0 means "no limit" on the wire: the daemon could not
		// tell --cpus 0 from no --cpus at all, so refuse it here.
		return nil, flagError("--cpus", o.cpus, errdefs.InvalidParameter(errors.New("the number of CPUs must be more than 0 (leave --cpus out for no limit)")))
	}
	reservation, err := opts.ParseMemory(o.memoryReservation)
	if err != nil {
		return nil, flagError("--memory-reservation", o.memoryReservation, err)
	}
	gpus, err := parseGpus(o.gpus)
	if err != nil {
		return nil, flagError("--gpus", o.gpus, err)
	}
	ulimits, err := opts.ParseUlimits(o.ulimits)
	if err != nil {
		return nil, err
	}
	devices, err := opts.ParseDevices(o.devices)
	if err != nil {
		return nil, err
	}
	restart, err := opts.ParseRestartPolicy(o.restart)
	if err != nil {
		return nil, err
	}
	tmpfs, err := opts.ParseTmpfs(o.tmpfs)
	if err != nil {
		return nil, err
	}
	binds, anonVolumes, err := opts.ParseVolumes(o.volumes)
	if err != nil {
		return nil, err
	}
	mounts, err := opts.ParseMounts(o.mounts)
	if err != nil {
		return nil, err
	}
	secOpts, err := opts.ParseSecurityOpts(o.securityOpt)
	if err != nil {
		return nil, err
	}
	logOpts, err := opts.ParseKeyValueOpts(o.logOpts, "log-opt")
	if err != nil {
		return nil, err
	}
	attachIn, attachOut, attachErr, err := parseAttach(o.attach, o.interactive)
	if err != nil {
		return nil, err
	}

	cfg := &opts.ContainerConfig{Init: o.init.ConfigInit()}
	c := &cfg.Config
	c.Image = args[0]
	if len(args) > 1 {
		c.Cmd = args[1:]
	}
	if fs.Changed("entrypoint") {
		// --entrypoint "" explicitly clears the image's entrypoint.
		c.Entrypoint = []string{o.entrypoint}
		if o.entrypoint == "" {
			c.Entrypoint = []string{""}
		}
	}
	c.Env = env
	c.Labels = labels
	if c.Healthcheck, err = o.health.config(); err != nil {
		return nil, err
	}
	c.WorkingDir = o.workdir
	c.User = o.user
	c.Hostname = o.hostname
	c.StopSignal = o.stopSignal
	if fs.Changed("stop-timeout") {
		t := o.stopTimeout
		c.StopTimeout = &t
	}
	c.Tty = o.tty
	c.OpenStdin = o.interactive
	c.AttachStdin, c.AttachStdout, c.AttachStderr = attachIn, attachOut, attachErr
	// With stdin attached, close it for the container once the client's
	// stdin ends, as docker run -i does.
	c.StdinOnce = attachIn
	c.Volumes = anonVolumes

	h := &container.HostConfig{
		Binds:          binds,
		Mounts:         mounts,
		VolumesFrom:    o.volumesFrom,
		NetworkMode:    container.NetworkMode(networkMode(o.network)),
		RestartPolicy:  restart,
		Privileged:     o.privileged,
		ReadonlyRootfs: o.readOnly,
		CapAdd:         normalizeCaps(o.capAdd),
		CapDrop:        normalizeCaps(o.capDrop),
		GroupAdd:       o.groupAdd,
		SecurityOpt:    secOpts,
		Tmpfs:          tmpfs,
		Init:           o.init.HostConfigInit(),
		LogConfig:      container.LogConfig{Type: o.logDriver, Config: logOpts},
		IpcMode:        container.IpcMode(o.ipc),
		PidMode:        container.PidMode(o.pid),
		UTSMode:        container.UTSMode(o.uts),
		ShmSize:        shmSize,
	}
	h.Memory = mem
	h.MemorySwap = swap
	h.NanoCPUs = nano
	h.CPUShares = o.cpuShares
	h.CpusetCpus = o.cpusetCpus
	h.CpusetMems = o.cpusetMems
	h.BlkioWeight = o.blkioWeight
	h.Ulimits = ulimits
	h.Devices = devices
	h.CgroupParent = o.cgroupParent
	h.CgroupnsMode = container.CgroupnsMode(o.cgroupns)
	h.Annotations = annotations(o.annotations)
	h.UsernsMode = container.UsernsMode(o.userns)
	h.DeviceCgroupRules = o.deviceCgroupRules
	h.DeviceRequests = gpus
	h.MemoryReservation = reservation
	h.OomScoreAdj = o.oomScoreAdj
	if fs.Changed("oom-kill-disable") {
		v := o.oomKillDisable
		h.OomKillDisable = &v
	}
	if fs.Changed("pids-limit") {
		p := o.pidsLimit
		h.PidsLimit = &p
	}
	nc, err := o.net.apply(c, h)
	if err != nil {
		return nil, err
	}
	return &parsed{config: cfg, host: h, network: nc}, nil
}

// parseGpus reads --gpus as Docker's CLI does ("all", a count, or
// "device=ID[,ID]", with capabilities and driver keys) into the device
// request the daemon is sent.
func parseGpus(v string) ([]container.DeviceRequest, error) {
	if v == "" {
		return nil, nil
	}
	req := container.DeviceRequest{Capabilities: [][]string{{"gpu"}}}
	for _, field := range strings.Split(v, ",") {
		key, val, hasVal := strings.Cut(field, "=")
		switch {
		case !hasVal && key == "all":
			req.Count = -1
		case !hasVal:
			n, err := strconv.Atoi(key)
			if err != nil || n < 0 {
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid count %q: use a number or \"all\"", key))
			}
			req.Count = n
		case key == "count":
			if val == "all" {
				req.Count = -1
				continue
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, errdefs.InvalidParameter(fmt.Errorf("invalid count %q", val))
			}
			req.Count = n
		case key == "device":
			req.DeviceIDs = strings.Split(val, ",")
		case key == "driver":
			req.Driver = val
		case key == "capabilities":
			req.Capabilities = [][]string{strings.Split(val, ",")}
		default:
			return nil, errdefs.InvalidParameter(fmt.Errorf("unexpected key %q", key))
		}
	}
	return []container.DeviceRequest{req}, nil
}

// flagError names the flag a bad value was given to, as pflag does.
func flagError(flag, value string, err error) error {
	return fmt.Errorf("invalid argument %q for \"%s\" flag: %w", value, flag, err)
}

// networkMode maps the CLI's "default" to the daemon's default network.
func networkMode(n string) string {
	if n == "" || n == "default" {
		return "default"
	}
	return n
}

// parseAttach applies docker's defaults: without -a, stdout and stderr are
// attached, and stdin too when -i is given.
func parseAttach(values []string, interactive bool) (in, out, errOut bool, err error) {
	if len(values) == 0 {
		return interactive, true, true, nil
	}
	for _, v := range values {
		switch strings.ToLower(v) {
		case "stdin":
			in = true
		case "stdout":
			out = true
		case "stderr":
			errOut = true
		default:
			return false, false, false, errdefs.InvalidParameter(fmt.Errorf("invalid argument %q for \"-a, --attach\" flag: valid streams are STDIN, STDOUT and STDERR", v))
		}
	}
	return in, out, errOut, nil
}

// normalizeCaps upper-cases capability names and adds the CAP_ prefix
// ("ALL" stays as is) so the daemon sees canonical names.
func normalizeCaps(caps []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range caps {
		c = strings.ToUpper(strings.TrimSpace(c))
		if c != "ALL" && !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// annotations is --annotation KEY=VALUE as a map, nil when none was given;
// a KEY without "=" has the empty value, as in Docker.
func annotations(list []string) map[string]string {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]string, len(list))
	for _, a := range list {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}
