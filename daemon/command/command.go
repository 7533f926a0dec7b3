// Package command is dockerd's command line: flags, daemon.json, the API
// listeners, and the process's life (pidfile, signals, sd_notify).
package command

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/api"
	"github.com/sdengine/engine/api/server"
	buildrouter "github.com/sdengine/engine/api/server/router/build"
	containerrouter "github.com/sdengine/engine/api/server/router/container"
	distributionrouter "github.com/sdengine/engine/api/server/router/distribution"
	eventsrouter "github.com/sdengine/engine/api/server/router/events"
	imagerouter "github.com/sdengine/engine/api/server/router/image"
	networkrouter "github.com/sdengine/engine/api/server/router/network"
	pluginrouter "github.com/sdengine/engine/api/server/router/plugin"
	prunerouter "github.com/sdengine/engine/api/server/router/prune"
	systemrouter "github.com/sdengine/engine/api/server/router/system"
	volumerouter "github.com/sdengine/engine/api/server/router/volume"
	"github.com/sdengine/engine/daemon"
	"github.com/sdengine/engine/daemon/config"
)

// New returns the dockerd command.
func New() *cobra.Command { return newCommand(run) }

// loadFunc reads the settings again (daemon.json with the flags over it),
// for a reload on SIGHUP.
type loadFunc func() (*config.Config, error)

// newCommand is dockerd's command line, handing the settings (daemon.json
// with the flags over it), the API's TLS and a way to read the settings
// again to start; tests give their own start. Every check that can refuse
// the settings runs before start, so a refused daemon has created nothing.
func newCommand(start func(*config.Config, *tls.Config, loadFunc) error) *cobra.Command {
	var (
		configFile string
		flagCfg    = config.Default()
		logOpts    []string
	)
	flagCfg.TLS, flagCfg.TLSVerify = new(bool), new(bool)
	flagCfg.IPForward, flagCfg.IPTables = new(bool), new(bool)
	cmd := &cobra.Command{
		Use:           "dockerd [OPTIONS]",
		Short:         "A self-sufficient runtime for containers, with systemd integration",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		Version:       api.EngineVersion,
		RunE: func(cmd *cobra.Command, _ []string) error {
			load := func() (*config.Config, error) {
				cfg := config.Default()
				explicit := cmd.Flags().Changed("config-file")
				if err := cfg.LoadFile(configFile, explicit); err != nil {
					return nil, err
				}
				if err := applyFlags(cmd, cfg, flagCfg, logOpts); err != nil {
					return nil, err
				}
				return cfg, nil
			}
			cfg, err := load()
			if err != nil {
				return err
			}
			tlsConf, err := apiTLS(cfg)
			if err != nil {
				return err
			}
			return start(cfg, tlsConf, load)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config-file", config.DefaultConfigFile, "Daemon configuration file")
	f.StringSliceVarP(&flagCfg.Hosts, "host", "H", nil, "Daemon socket(s) to connect to")
	f.StringVar(&flagCfg.Root, "data-root", config.DefaultRoot, "Root directory of persistent Docker state")
	f.StringVar(&flagCfg.ExecRoot, "exec-root", config.DefaultExecRoot, "Root directory for execution state files")
	f.StringVarP(&flagCfg.Pidfile, "pidfile", "p", config.DefaultPidfile, "Path to use for daemon PID file")
	f.StringVarP(&flagCfg.StorageDriver, "storage-driver", "s", "", "Storage driver to use (overlay2, vfs)")
	f.StringVar(&flagCfg.LogDriver, "log-driver", config.DefaultLogDriver, "Default driver for container logs")
	f.StringArrayVar(&logOpts, "log-opt", nil, "Default log driver options for containers")
	f.BoolVarP(&flagCfg.Debug, "debug", "D", false, "Enable debug mode")
	f.StringVarP(&flagCfg.LogLevel, "log-level", "l", "info", `Set the logging level ("debug"|"info"|"warn"|"error")`)
	f.BoolVar(&flagCfg.LiveRestore, "live-restore", false, "Leave containers running when the daemon shuts down")
	f.StringSliceVar(&flagCfg.ExecOpts, "exec-opt", nil, "Runtime execution options")
	f.IntVar(&flagCfg.ShimGroupSize, "shim-group-size", 0, "Containers one shim process hosts at most; 1 for a shim per container (default 32)")
	f.StringVarP(&flagCfg.Group, "group", "G", config.DefaultGroup, "Group for the unix socket")
	f.StringSliceVar(&flagCfg.HooksDirs, "hooks-dir", config.DefaultHooksDirs, "Directories searched for prestart/poststop hooks")
	f.StringVar(&flagCfg.MinFreeSpace, "min-free-space", config.DefaultMinFreeSpace,
		`Free space image import and load leave on the data root's filesystem: a percentage of it ("5%") or a size ("2GB"); "0" for none`)
	f.StringSliceVar(&flagCfg.InsecureRegistries, "insecure-registry", nil, "Enable insecure registry communication (plain HTTP, unverified TLS)")
	f.StringSliceVar(&flagCfg.RegistryMirrors, "registry-mirror", nil, "Preferred registry mirror for Docker Hub names")
	f.Var(mirrorsFor{&flagCfg.RegistryMirrorsFor}, "registry-mirror-for", "Mirror of a registry, as HOST=URL (repeatable; tried in order before HOST)")
	f.StringSliceVar(&flagCfg.AddRegistries, "add-registry", nil, "Registry to look unqualified image names up in, before Docker Hub (repeatable, in order)")
	f.StringSliceVar(&flagCfg.BlockRegistries, "block-registry", nil, `Registry to refuse for pull, push and search (repeatable; "all" for every registry not added)`)
	f.StringVar(&flagCfg.RegistryCertsDir, "registry-certs-dir", config.DefaultRegistryCertsDir, "Directory of per-registry TLS certificates (<dir>/<host:port>/ca.crt, client.cert, client.key)")
	f.StringVarP(&flagCfg.Bridge, "bridge", "b", "", `Attach containers to a network bridge ("none" for no default bridge; default docker0)`)
	f.StringVar(&flagCfg.BIP, "bip", "", "IPv4 address and prefix length of the default bridge (default 172.17.0.1/16)")
	f.StringVar(&flagCfg.FixedCIDR, "fixed-cidr", "", "IPv4 subnet the default bridge's containers get addresses from")
	f.BoolVar(&flagCfg.IPv6, "ipv6", false, "Enable IPv6 on the default bridge (its subnet is --fixed-cidr-v6)")
	f.StringVar(&flagCfg.FixedCIDRv6, "fixed-cidr-v6", "", "IPv6 subnet of the default bridge (with --ipv6; its first address is the gateway)")
	f.IntVar(&flagCfg.MTU, "mtu", 0, "Set the MTU of the default bridge's containers")
	f.BoolVar(flagCfg.IPForward, "ip-forward", true, "Enable net.ipv4.ip_forward")
	f.BoolVar(flagCfg.IPTables, "iptables", true, "Enable the daemon's NAT rules (an nftables table of its own)")
	f.StringVar(&flagCfg.HostResolvConf, "host-resolv-conf", "", "The host's resolv.conf (tests)")
	_ = f.MarkHidden("host-resolv-conf")
	f.StringVar(&flagCfg.CRISocket, "cri-socket", "", "Serve Kubernetes' CRI on this unix socket (docs/kubernetes.md)")
	f.StringVar(&flagCfg.CNIConfDir, "cni-conf-dir", config.DefaultCNIConfDir, "Directory of the CNI network configuration for CRI pods")
	f.StringSliceVar(&flagCfg.CNIBinDirs, "cni-bin-dir", []string{config.DefaultCNIBinDir}, "Directory of CNI plugins (repeatable, searched in order)")
	f.StringVar(&flagCfg.CRIStreamAddress, "cri-stream-address", config.DefaultCRIStreamAddress, "Address of the CRI streaming server (exec, attach, port-forward)")
	f.BoolVar(flagCfg.TLS, "tls", false, "Use TLS; implied by --tlsverify")
	f.BoolVar(flagCfg.TLSVerify, "tlsverify", false, "Use TLS and verify the remote")
	f.StringVar(&flagCfg.TLSCACert, "tlscacert", flagCfg.TLSCACert, "Trust certs signed only by this CA")
	f.StringVar(&flagCfg.TLSCert, "tlscert", flagCfg.TLSCert, "Path to TLS certificate file")
	f.StringVar(&flagCfg.TLSKey, "tlskey", flagCfg.TLSKey, "Path to TLS key file")
	return cmd
}

// applyFlags lays the flags the user set over daemon.json; a setting given
// in both places is an error, as in Docker.
func applyFlags(cmd *cobra.Command, cfg, flags *config.Config, logOpts []string) error {
	type setting struct {
		flag, key string
		fileSet   bool
		apply     func()
	}
	def := config.Default()
	settings := []setting{
		{"host", "hosts", len(cfg.Hosts) > 0, func() { cfg.Hosts = flags.Hosts }},
		{"data-root", "data-root", cfg.Root != config.DefaultRoot, func() { cfg.Root = flags.Root }},
		{"exec-root", "exec-root", cfg.ExecRoot != config.DefaultExecRoot, func() { cfg.ExecRoot = flags.ExecRoot }},
		{"pidfile", "pidfile", cfg.Pidfile != config.DefaultPidfile, func() { cfg.Pidfile = flags.Pidfile }},
		{"storage-driver", "storage-driver", cfg.StorageDriver != "", func() { cfg.StorageDriver = flags.StorageDriver }},
		{"log-driver", "log-driver", cfg.LogDriver != config.DefaultLogDriver, func() { cfg.LogDriver = flags.LogDriver }},
		{"debug", "debug", cfg.Debug, func() { cfg.Debug = flags.Debug }},
		{"log-level", "log-level", cfg.LogLevel != "", func() { cfg.LogLevel = flags.LogLevel }},
		{"live-restore", "live-restore", cfg.LiveRestore, func() { cfg.LiveRestore = flags.LiveRestore }},
		{"shim-group-size", "shim-group-size", cfg.ShimGroupSize != 0, func() { cfg.ShimGroupSize = flags.ShimGroupSize }},
		{"exec-opt", "exec-opts", len(cfg.ExecOpts) > 0, func() { cfg.ExecOpts = flags.ExecOpts }},
		{"group", "group", cfg.Group != config.DefaultGroup, func() { cfg.Group = flags.Group }},
		{"hooks-dir", "hooks-dirs", false, func() { cfg.HooksDirs = flags.HooksDirs }},
		{"min-free-space", "min-free-space", cfg.MinFreeSpace != config.DefaultMinFreeSpace, func() { cfg.MinFreeSpace = flags.MinFreeSpace }},
		{"insecure-registry", "insecure-registries", len(cfg.InsecureRegistries) > 0, func() { cfg.InsecureRegistries = flags.InsecureRegistries }},
		{"registry-mirror", "registry-mirrors", len(cfg.RegistryMirrors) > 0, func() { cfg.RegistryMirrors = flags.RegistryMirrors }},
		{"registry-mirror-for", "registry-mirrors-for", len(cfg.RegistryMirrorsFor) > 0, func() { cfg.RegistryMirrorsFor = flags.RegistryMirrorsFor }},
		{"add-registry", "add-registry", len(cfg.AddRegistries) > 0, func() { cfg.AddRegistries = flags.AddRegistries }},
		{"block-registry", "block-registry", len(cfg.BlockRegistries) > 0, func() { cfg.BlockRegistries = flags.BlockRegistries }},
		{"registry-certs-dir", "registry-certs-dir", cfg.RegistryCertsDir != config.DefaultRegistryCertsDir, func() { cfg.RegistryCertsDir = flags.RegistryCertsDir }},
		{"bridge", "bridge", cfg.Bridge != "", func() { cfg.Bridge = flags.Bridge }},
		{"bip", "bip", cfg.BIP != "", func() { cfg.BIP = flags.BIP }},
		{"fixed-cidr", "fixed-cidr", cfg.FixedCIDR != "", func() { cfg.FixedCIDR = flags.FixedCIDR }},
		{"ipv6", "ipv6", cfg.IPv6, func() { cfg.IPv6 = flags.IPv6 }},
		{"fixed-cidr-v6", "fixed-cidr-v6", cfg.FixedCIDRv6 != "", func() { cfg.FixedCIDRv6 = flags.FixedCIDRv6 }},
		{"mtu", "mtu", cfg.MTU != 0, func() { cfg.MTU = flags.MTU }},
		{"ip-forward", "ip-forward", cfg.IPForward != nil, func() { cfg.IPForward = flags.IPForward }},
		{"iptables", "iptables", cfg.IPTables != nil, func() { cfg.IPTables = flags.IPTables }},
		{"host-resolv-conf", "-", false, func() { cfg.HostResolvConf = flags.HostResolvConf }},
		{"cri-socket", "cri-socket", cfg.CRISocket != "", func() { cfg.CRISocket = flags.CRISocket }},
		{"cni-conf-dir", "cni-conf-dir", cfg.CNIConfDir != config.DefaultCNIConfDir, func() { cfg.CNIConfDir = flags.CNIConfDir }},
		{"cni-bin-dir", "cni-bin-dirs", !slices.Equal(cfg.CNIBinDirs, def.CNIBinDirs), func() { cfg.CNIBinDirs = flags.CNIBinDirs }},
		{"cri-stream-address", "cri-stream-address", cfg.CRIStreamAddress != config.DefaultCRIStreamAddress, func() { cfg.CRIStreamAddress = flags.CRIStreamAddress }},
		{"tls", "tls", cfg.TLS != nil, func() { cfg.TLS = flags.TLS }},
		{"tlsverify", "tlsverify", cfg.TLSVerify != nil, func() { cfg.TLSVerify = flags.TLSVerify }},
		{"tlscacert", "tlscacert", cfg.TLSCACert != def.TLSCACert, func() { cfg.TLSCACert = flags.TLSCACert }},
		{"tlscert", "tlscert", cfg.TLSCert != def.TLSCert, func() { cfg.TLSCert = flags.TLSCert }},
		{"tlskey", "tlskey", cfg.TLSKey != def.TLSKey, func() { cfg.TLSKey = flags.TLSKey }},
	}
	for _, s := range settings {
		if !cmd.Flags().Changed(s.flag) {
			continue
		}
		if s.fileSet {
			return fmt.Errorf("the following directives are specified both as a flag and in the configuration file: %s", s.key)
		}
		s.apply()
	}
	if len(logOpts) > 0 {
		if len(cfg.LogOpts) > 0 {
			return fmt.Errorf("the following directives are specified both as a flag and in the configuration file: log-opts")
		}
		cfg.LogOpts = map[string]string{}
		for _, o := range logOpts {
			k, v, ok := strings.Cut(o, "=")
			if !ok {
				return fmt.Errorf("invalid --log-opt %q: want KEY=VALUE", o)
			}
			cfg.LogOpts[k] = v
		}
	}
	if len(cfg.Hosts) == 0 {
		cfg.Hosts = []string{config.DefaultHost}
	}
	if _, err := cfg.MinFreeSpaceReserve(); err != nil {
		return err
	}
	if cfg.BridgeDisabled() && (cfg.BIP != "" || cfg.FixedCIDR != "") {
		return fmt.Errorf("you specified -b & --bip/--fixed-cidr, mutually exclusive options. Please specify only one")
	}
	if cfg.IPv6 && cfg.FixedCIDRv6 == "" && !cfg.BridgeDisabled() {
		return fmt.Errorf("--ipv6 needs --fixed-cidr-v6: the default bridge's IPv6 subnet")
	}
	return nil
}

// logLevel is the daemon's log level, which a reload changes.
var logLevel slog.LevelVar

func setupLogging(cfg *config.Config) error {
	if err := setLogLevel(cfg); err != nil {
		return err
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: &logLevel})))
	return nil
}

// setLogLevel sets the level cfg asks for: debug wins over log-level.
func setLogLevel(cfg *config.Config) error {
	level := slog.LevelInfo
	if cfg.LogLevel != "" {
		if err := level.UnmarshalText([]byte(strings.ToUpper(cfg.LogLevel))); err != nil {
			return fmt.Errorf("invalid log level %q", cfg.LogLevel)
		}
	}
	if cfg.Debug {
		level = slog.LevelDebug
	}
	logLevel.Set(level)
	return nil
}

// reload reads the settings again on SIGHUP and applies what can change
// while the daemon runs; a file that does not load changes nothing (the
// daemon goes on with what it has, as Docker's does).
func reload(d *daemon.Daemon, load loadFunc) {
	cfg, err := load()
	if err == nil {
		err = setLogLevel(cfg)
	}
	if err != nil {
		slog.Error("reload: the configuration was not reloaded", "err", err)
		return
	}
	d.Reload(cfg)
}

func run(cfg *config.Config, tlsConf *tls.Config, load loadFunc) error {
	if err := setupLogging(cfg); err != nil {
		return err
	}
	if err := writePidfile(cfg.Pidfile); err != nil {
		return err
	}
	defer os.Remove(cfg.Pidfile)

	shim, err := shimBinary()
	if err != nil {
		return err
	}
	// Signals are taken from here on: a SIGTERM while the daemon sets up
	// (the bridge, its rules, recovery) is served once New returned, by a
	// shutdown that removes what it set up, rather than killing the
	// process half way and leaving the host's network to the next start.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	hupc := make(chan os.Signal, 1)
	signal.Notify(hupc, syscall.SIGHUP)
	ctx := context.Background()
	d, err := daemon.New(ctx, cfg, shim)
	if err != nil {
		return err
	}
	srv := server.New(systemrouter.New(d), containerrouter.New(d), imagerouter.New(d),
		distributionrouter.New(d), networkrouter.New(d), volumerouter.New(d), pluginrouter.New(), buildrouter.New(d),
		prunerouter.New(d), eventsrouter.New(d))
	listeners, err := listen(cfg, tlsConf)
	if err != nil {
		shutdownCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		d.Shutdown(shutdownCtx)
		return err
	}
	// One each for the API's listeners, the CRI's and its streaming server.
	errc := make(chan error, len(listeners)+2)
	for _, l := range listeners {
		slog.Info("API listening", "addr", l.Addr().String())
		go func() { errc <- srv.Serve(l) }()
	}
	criCtx, stopCRI := context.WithCancel(ctx)
	defer stopCRI()
	if err := startCRI(criCtx, cfg, d, shim, errc); err != nil {
		shutdownCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		srv.Close(shutdownCtx)
		d.Shutdown(shutdownCtx)
		return err
	}
	_, _ = sddaemon.SdNotify(false, sddaemon.SdNotifyReady)

wait:
	for {
		select {
		case <-hupc:
			reload(d, load)
		case s := <-sigc:
			slog.Info("shutting down", "signal", s.String())
			break wait
		case err := <-errc:
			slog.Error("API server failed", "err", err)
			break wait
		}
	}
	_, _ = sddaemon.SdNotify(false, sddaemon.SdNotifyStopping)
	shutdownCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	stopCRI()
	srv.Close(shutdownCtx)
	d.Shutdown(shutdownCtx)
	return nil
}

// shimBinary finds docker-shim: beside dockerd (a build tree, /usr/bin),
// then in /usr/libexec/docker. Without one, dockerd itself serves as the
// shim (it has the same entry points), only slower to start containers.
func shimBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(self), "docker-shim"), "/usr/libexec/docker/docker-shim"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	slog.Warn("docker-shim not found; using dockerd itself as the shim")
	return self, nil
}

// writePidfile refuses to start beside a live daemon that owns the file
// (daemonAlive: a dead one's zombie, or a reused pid, is no owner).
func writePidfile(path string) error {
	if path == "" {
		return nil
	}
	if b, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && daemonAlive(pid) {
			return fmt.Errorf("pid file found, ensure docker is not running or delete %s", path)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create pidfile dir: %w", err)
	}
	return os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// listen opens every -H host. The sockets systemd passed are read once and
// shared out among the fd:// hosts, each served once (`-H fd:// -H fd://`,
// or `fd://` beside `fd://NAME`, does not serve one twice); those no host
// names are closed. With tlsConf, TCP sockets (tcp:// hosts and TCP
// sockets systemd passed) speak TLS; unix sockets never do. On an error
// nothing stays open.
func listen(cfg *config.Config, tlsConf *tls.Config) (out []net.Listener, err error) {
	var sd activatedSockets
	defer func() {
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			out = nil
		}
		sd.closeUntaken()
	}()
	for _, h := range cfg.Hosts {
		proto, addr, ok := strings.Cut(h, "://")
		if !ok {
			proto, addr = "unix", h
		}
		switch proto {
		case "unix":
			l, err := listenUnix(addr, cfg.Group)
			if err != nil {
				return out, err
			}
			out = append(out, l)
		case "fd":
			ls, err := sd.take(addr)
			if err != nil {
				return out, err
			}
			out = append(out, activatedWithTLS(cfg, h, ls, tlsConf)...)
		case "tcp":
			warnUnverifiedTCP(cfg, h)
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return out, fmt.Errorf("listen on %s: %w", h, err)
			}
			out = append(out, withTLS(l, tlsConf))
		default:
			return out, fmt.Errorf("invalid host %q: protocol %q not supported", h, proto)
		}
	}
	return out, nil
}

func listenUnix(path, group string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s is in use by another daemon", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	gid := lookupGroup(group)
	if err := os.Chown(path, 0, gid); err != nil {
		slog.Warn("chown socket", "path", path, "err", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return l, nil
}

// lookupGroup returns the group's ID, or root's when the group is missing
// (the socket is then root-only, which is the safe fallback).
func lookupGroup(name string) int {
	b, err := os.ReadFile("/etc/group")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && f[0] == name {
			if gid, err := strconv.Atoi(f[2]); err == nil {
				return gid
			}
		}
	}
	if name != "" && name != config.DefaultGroup {
		slog.Warn("socket group not found; socket is root-only", "group", name)
	}
	return 0
}
