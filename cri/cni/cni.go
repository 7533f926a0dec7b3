// Package cni sets up and tears down pods' networks with CNI plugins
// (github.com/containernetworking/cni's libcni runs them), as the kubelet
// expects of a runtime: the first network configuration of the
// configuration directory, in lexical order, is the pod network.
package cni

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// Config says where the CNI configuration and plugins are, and where
// libcni keeps what each attachment was set up with (so that a teardown
// uses the configuration of the set-up even if the file changed since).
type Config struct {
	ConfDir  string
	BinDirs  []string
	CacheDir string
}

// Manager runs the pod network of ConfDir.
type Manager struct {
	cfg Config
	cni *libcni.CNIConfig
}

// PortMapping is a hostPort, handed to plugins with the portMappings
// capability (portmap).
type PortMapping struct {
	HostPort, ContainerPort int32
	Protocol                string
	HostIP                  string
}

// Pod is what CNI is told of a pod. NetNS is the path of its pinned
// network namespace.
type Pod struct {
	ID, Name, Namespace, UID, NetNS string
	PortMappings                    []PortMapping
}

// Result is the pod's addresses on the pod network.
type Result struct{ IPs []netip.Addr }

// ifName is the pod's interface on the pod network, as in every runtime.
const ifName = "eth0"

// New prepares a manager; the configuration is read at each call, so that
// one written after the daemon started (by a network add-on) is used.
func New(cfg Config) (*Manager, error) {
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("cni: %w", err)
		}
	}
	return &Manager{cfg: cfg, cni: libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, cfg.CacheDir, nil)}, nil
}

// network loads the pod network: the first network configuration list of
// ConfDir that parses (.conflist, .conf or .json; libcni no longer reads
// the single-plugin format of CNI's first versions).
func (m *Manager) network() (*libcni.NetworkConfigList, error) {
	files, err := libcni.ConfFiles(m.cfg.ConfDir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return nil, fmt.Errorf("cni: read %s: %w", m.cfg.ConfDir, err)
	}
	sort.Strings(files)
	var errs []error
	for _, f := range files {
		list, err := libcni.NetworkConfFromFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		return list, nil
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("cni: no usable network configuration in %s: %w", m.cfg.ConfDir, errors.Join(errs...))
	}
	return nil, fmt.Errorf("cni: no network configuration in %s", m.cfg.ConfDir)
}

// Status says whether pods can get a network: a configuration exists and
// its plugins are installed.
func (m *Manager) Status() error {
	list, err := m.network()
	if err != nil {
		return err
	}
	for _, p := range list.Plugins {
		if _, err := invoke.FindInPath(p.Network.Type, m.cfg.BinDirs); err != nil {
			return fmt.Errorf("cni: network %q: plugin %q: %w", list.Name, p.Network.Type, err)
		}
	}
	return nil
}

// runtimeConf is what every plugin is told of the pod; the K8S_ arguments
// are those the kubelet's own runtimes pass (IgnoreUnknown lets plugins
// that know none of them accept them).
func runtimeConf(p Pod) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: p.ID,
		NetNS:       p.NetNS,
		IfName:      ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", p.Namespace},
			{"K8S_POD_NAME", p.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", p.ID},
			{"K8S_POD_UID", p.UID},
		},
	}
	if len(p.PortMappings) > 0 {
		pms := make([]map[string]any, 0, len(p.PortMappings))
		for _, pm := range p.PortMappings {
			pms = append(pms, map[string]any{
				"hostPort": pm.HostPort, "containerPort": pm.ContainerPort,
				"protocol": pm.Protocol, "hostIP": pm.HostIP,
			})
		}
		rt.CapabilityArgs = map[string]any{"portMappings": pms}
	}
	return rt
}

// Setup attaches the pod to the pod network. On error it tears down what
// it did, so a failed pod holds no address.
func (m *Manager) Setup(ctx context.Context, p Pod) (Result, error) {
	list, err := m.network()
	if err != nil {
		return Result{}, err
	}
	rt := runtimeConf(p)
	res, err := m.cni.AddNetworkList(ctx, list, rt)
	if err != nil {
		if derr := m.cni.DelNetworkList(ctx, list, rt); derr != nil {
			err = errors.Join(err, fmt.Errorf("undo: %w", derr))
		}
		return Result{}, fmt.Errorf("cni: add pod %s to network %q: %w", p.ID, list.Name, err)
	}
	cur, err := types100.NewResultFromResult(res)
	if err != nil {
		return Result{}, fmt.Errorf("cni: network %q: %w", list.Name, err)
	}
	var out Result
	for _, ip := range cur.IPs {
		if a, ok := netip.AddrFromSlice(ip.Address.IP); ok {
			out.IPs = append(out.IPs, a.Unmap())
		}
	}
	return out, nil
}

// Teardown detaches the pod from the pod network. It is idempotent: the
// plugins must accept a DEL of what is not there, and a pod whose network
// namespace is already gone is deleted with no namespace (the plugins then
// release its address and host-side state only). The configuration used is
// the one the pod was set up with, when libcni cached it.
func (m *Manager) Teardown(ctx context.Context, p Pod) error {
	rt := runtimeConf(p)
	if p.NetNS != "" {
		if _, err := os.Stat(p.NetNS); err != nil {
			rt.NetNS = ""
		}
	}
	list, err := m.network()
	if err != nil {
		return err
	}
	if cached, _, cerr := m.cni.GetNetworkListCachedConfig(list, rt); cerr == nil && cached != nil {
		if l, err := libcni.NetworkConfFromBytes(cached); err == nil && len(l.Plugins) > 0 {
			list = l
		}
	}
	if err := m.cni.DelNetworkList(ctx, list, rt); err != nil {
		return fmt.Errorf("cni: remove pod %s from network %q: %w", p.ID, list.Name, err)
	}
	return nil
}
