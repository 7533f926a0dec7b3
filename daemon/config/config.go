// Package config holds the daemon's settings: defaults, daemon.json, and
// the command line on top of both.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sdengine/engine/pkg/fsreserve"
)

// Config is what the daemon is told to be. The JSON names are daemon.json's.
type Config struct {
	Hosts         []string          `json:"hosts,omitempty"`
	Root          string            `json:"data-root,omitempty"`
	ExecRoot      string            `json:"exec-root,omitempty"`
	Pidfile       string            `json:"pidfile,omitempty"`
	StorageDriver string            `json:"storage-driver,omitempty"`
	LogDriver     string            `json:"log-driver,omitempty"`
	LogOpts       map[string]string `json:"log-opts,omitempty"`
	Debug         bool              `json:"debug,omitempty"`
	LogLevel      string            `json:"log-level,omitempty"`
	LiveRestore   bool              `json:"live-restore,omitempty"`
	// ShimGroupSize is how many containers one shim process hosts at
	// most (docs/shim.md); 0 is the default, 1 a shim per
	// container.
	ShimGroupSize int      `json:"shim-group-size,omitempty"`
	ExecOpts      []string `json:"exec-opts,omitempty"`
	Group         string   `json:"group,omitempty"`
	HooksDirs     []string `json:"hooks-dirs,omitempty"`
	// AutoSystemd gives images whose command is an init the systemd
	// profile without --init=systemd (docs/systemd.md). A pointer: unset means on.
	AutoSystemd *bool `json:"auto-systemd-init,omitempty"`
	// MinFreeSpace is the free space image import and load leave on the
	// data root's filesystem: a percentage of it or a size (pkg/fsreserve).
	MinFreeSpace string `json:"min-free-space,omitempty"`
	// Registries (distribution/): those reached over plain HTTP or with an
	// unverified certificate (hosts or CIDRs; loopback always is), and the
	// mirrors tried before Docker Hub for its names.
	InsecureRegistries []string `json:"insecure-registries,omitempty"`
	RegistryMirrors    []string `json:"registry-mirrors,omitempty"`
	// RegistryMirrorsFor are mirrors of any registry, by its host, tried
	// in order before it (an extension: Docker has mirrors for Docker Hub
	// only; a Kubernetes node serves registry.k8s.io from one).
	RegistryMirrorsFor map[string][]string `json:"registry-mirrors-for,omitempty"`
	// Red Hat's search list, an opt-in (docs/registries.md): registries
	// an unqualified name is looked for in before Docker Hub, and
	// registries refused ("all": every one not added). The keys are the
	// 2016 Red Hat fork's.
	AddRegistries   []string `json:"add-registry,omitempty"`
	BlockRegistries []string `json:"block-registry,omitempty"`
	// RegistryCertsDir holds a directory of TLS material per registry
	// (ca.crt, client.cert, client.key), as Docker's /etc/docker/certs.d.
	RegistryCertsDir string `json:"registry-certs-dir,omitempty"`

	// The default bridge network (libnetwork/bridge): its interface
	// ("none": no bridge, containers of the default network get only lo),
	// the gateway address with the subnet's length, the part of the subnet
	// containers are given addresses from, the MTU of the containers'
	// interfaces; whether the daemon sets net.ipv4.ip_forward and writes
	// its NAT table. Pointers: unset means on, as in Docker.
	Bridge    string `json:"bridge,omitempty"`
	BIP       string `json:"bip,omitempty"`
	FixedCIDR string `json:"fixed-cidr,omitempty"`
	// IPv6 on the default bridge (--ipv6): its IPv6 subnet is
	// --fixed-cidr-v6, whose first address is the gateway.
	IPv6        bool   `json:"ipv6,omitempty"`
	FixedCIDRv6 string `json:"fixed-cidr-v6,omitempty"`
	MTU         int    `json:"mtu,omitempty"`
	IPForward   *bool  `json:"ip-forward,omitempty"`
	IPTables    *bool  `json:"iptables,omitempty"`
	// HostResolvConf is the resolv.conf read as the host's (the embedded
	// DNS server's upstreams, the default bridge's resolvers): a hidden
	// flag for tests, whose upstream is a server of their own.
	HostResolvConf string `json:"-"`

	// Kubernetes' CRI (package cri, docs/kubernetes.md): served on
	// CRISocket when it is set; pods' networks come from the CNI
	// configuration in CNIConfDir, run by the plugins in CNIBinDirs; exec,
	// attach and port-forward stream from CRIStreamAddress.
	CRISocket        string   `json:"cri-socket,omitempty"`
	CNIConfDir       string   `json:"cni-conf-dir,omitempty"`
	CNIBinDirs       []string `json:"cni-bin-dirs,omitempty"`
	CRIStreamAddress string   `json:"cri-stream-address,omitempty"`

	// TLS of the API's TCP sockets (docs/tls.md). Pointers: an explicit
	// false differs from unset (tls=false is the opt-in to plain HTTP on
	// TCP; tlsverify given at all, true or false, turns TLS on).
	TLS       *bool  `json:"tls,omitempty"`
	TLSVerify *bool  `json:"tlsverify,omitempty"`
	TLSCACert string `json:"tlscacert,omitempty"`
	TLSCert   string `json:"tlscert,omitempty"`
	TLSKey    string `json:"tlskey,omitempty"`
}

// The default paths (README.md, "dockerd").
const (
	DefaultHost       = "unix:///var/run/docker.sock"
	DefaultRoot       = "/var/lib/docker"
	DefaultExecRoot   = "/var/run/docker"
	DefaultConfigFile = "/etc/docker/daemon.json"
	DefaultPidfile    = "/var/run/docker.pid"
	DefaultGroup      = "docker"
	DefaultLogDriver  = "json-file"
	// DefaultMinFreeSpace: why 5%, see fsreserve.Default.
	DefaultMinFreeSpace = fsreserve.Default
	// DefaultRegistryCertsDir is Docker's certs.d.
	DefaultRegistryCertsDir = "/etc/docker/certs.d"
	// The CNI's usual places, as the kubelet's other runtimes use them.
	DefaultCNIConfDir = "/etc/cni/net.d"
	DefaultCNIBinDir  = "/opt/cni/bin"
	// DefaultCRIStreamAddress: loopback only, a port of the kernel's
	// choosing; the kubelet proxies the streams to the API server.
	DefaultCRIStreamAddress = "127.0.0.1:0"
)

// DefaultHooksDirs are searched in order; the first that exists is used.
var DefaultHooksDirs = []string{"/usr/libexec/docker/hooks.d", "/usr/lib/docker/hooks.d"}

// The TLS files' names in the certificate directory (DefaultCertDir).
const (
	DefaultCAFile   = "ca.pem"
	DefaultCertFile = "cert.pem"
	DefaultKeyFile  = "key.pem"
)

// DefaultCertDir is where the TLS files are by default, as Docker looks
// for them: $DOCKER_CERT_PATH, else $DOCKER_CONFIG, else ~/.docker.
func DefaultCertDir() string {
	if d := os.Getenv("DOCKER_CERT_PATH"); d != "" {
		return d
	}
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".docker")
}

// Default returns a config with every default filled in.
func Default() *Config {
	certs := DefaultCertDir()
	return &Config{
		Root:             DefaultRoot,
		ExecRoot:         DefaultExecRoot,
		Pidfile:          DefaultPidfile,
		LogDriver:        DefaultLogDriver,
		Group:            DefaultGroup,
		HooksDirs:        append([]string{}, DefaultHooksDirs...),
		CNIConfDir:       DefaultCNIConfDir,
		CNIBinDirs:       []string{DefaultCNIBinDir},
		CRIStreamAddress: DefaultCRIStreamAddress,
		TLSCACert:        filepath.Join(certs, DefaultCAFile),
		TLSCert:          filepath.Join(certs, DefaultCertFile),
		TLSKey:           filepath.Join(certs, DefaultKeyFile),

		MinFreeSpace:     DefaultMinFreeSpace,
		RegistryCertsDir: DefaultRegistryCertsDir,
	}
}

// LoadFile merges daemon.json at path into c. A missing file is fine when
// it is the default path; an unknown key or malformed JSON is an error, so
// a typo never goes unnoticed.
func (c *Config) LoadFile(path string, mustExist bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !mustExist {
			return nil
		}
		return fmt.Errorf("read daemon config: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("daemon config %s: %w", path, err)
	}
	return nil
}

// MinFreeSpaceReserve parses MinFreeSpace.
func (c *Config) MinFreeSpaceReserve() (fsreserve.Reserve, error) {
	return fsreserve.Parse(c.MinFreeSpace)
}

// BridgeDisabled reports whether the default bridge is off (--bridge none).
func (c *Config) BridgeDisabled() bool { return c.Bridge == "none" }

// IPForwardEnabled and IPTablesEnabled read the pointers (unset is on).
func (c *Config) IPForwardEnabled() bool { return c.IPForward == nil || *c.IPForward }

// IPTablesEnabled: see IPForwardEnabled.
func (c *Config) IPTablesEnabled() bool { return c.IPTables == nil || *c.IPTables }

// AutoSystemdEnabled reports whether the automatic systemd profile is on.
func (c *Config) AutoSystemdEnabled() bool { return c.AutoSystemd == nil || *c.AutoSystemd }

// TLSMode is how the API's TCP sockets are served, from tls and tlsverify
// as dockerd reads them: tlsverify given at all (true or false) turns TLS
// on; TLS verifies client certificates unless tlsverify is false; TLS off
// is plain HTTP, which a TCP host takes only when tls=false was said.
type TLSMode int

const (
	// TLSModeUnset: neither tls nor tlsverify given; plain HTTP, refused on TCP.
	TLSModeUnset TLSMode = iota
	// TLSModeOff: tls=false given; plain HTTP, taken on TCP with a warning.
	TLSModeOff
	// TLSModeNoVerify: TLS, any client (tlsverify=false).
	TLSModeNoVerify
	// TLSModeVerify: TLS, only clients with a certificate signed by the CA.
	TLSModeVerify
)

// TLSMode resolves tls and tlsverify.
func (c *Config) TLSMode() TLSMode {
	switch {
	case c.TLSVerify != nil && !*c.TLSVerify:
		return TLSModeNoVerify
	case c.TLSVerify != nil, c.TLS != nil && *c.TLS:
		return TLSModeVerify
	case c.TLS != nil:
		return TLSModeOff
	}
	return TLSModeUnset
}
