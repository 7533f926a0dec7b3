// Package distribution talks to image registries (the Docker Registry
// HTTP API v2 and the OCI distribution spec) through
// github.com/google/go-containerregistry: pull, push and login. It moves
// layers in and out of the image store (image/) and knows nothing of the
// daemon; the daemon holds one Service and calls it.
package distribution

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/distribution/reference"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/registry"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/pkg/errdefs"
)

// Config is the daemon's registry settings.
type Config struct {
	// InsecureRegistries are hosts ("host:port", "host") or CIDRs whose
	// registries may be spoken to over plain HTTP or with a certificate
	// that is not verified (daemon --insecure-registry).
	InsecureRegistries []string
	// Mirrors are registry URLs tried, in order, before Docker Hub for a
	// Docker Hub name (daemon --registry-mirror).
	Mirrors []string
	// MirrorsFor are, per registry host ("registry.k8s.io", "host:port";
	// "docker.io" adds to Mirrors), registry URLs tried in order before it
	// (daemon --registry-mirror-for HOST=URL). A mirror is spoken to
	// anonymously, and the registry itself is tried last.
	MirrorsFor map[string][]string
	// AddRegistries is Red Hat's search list (daemon --add-registry):
	// registries an unqualified name is looked for in, in order, before
	// Docker Hub. Empty: unqualified names are Docker Hub's, as in Docker.
	AddRegistries []string
	// BlockRegistries are registries refused for pull, push and search
	// (daemon --block-registry); "all" refuses every registry not in
	// AddRegistries.
	BlockRegistries []string
	// CertsDir holds a directory per registry ("host:port") with its
	// ca.crt (or any *.crt), client.cert and client.key, as Docker reads
	// /etc/docker/certs.d.
	CertsDir string
	// Events, when set, is told of each reference pulled or pushed (the
	// daemon's "pull" and "push" image events; one per tag).
	Events func(action eventtypes.Action, ref reference.Named)
}

// userAgent is what the daemon calls itself to registries.
const userAgent = "docker/28.5.2 (sdengine)"

// Service pulls into, and pushes from, one image store.
type Service struct {
	store      *image.Store
	insecure   map[string]bool
	nets       []*net.IPNet
	mirrors    map[string][]string // registry host -> mirror hosts, in order
	mirrorURLs map[string][]string // the same, as configured (for info)
	added      []string            // the search list before Docker Hub (--add-registry)
	blocked    map[string]bool
	blockAll   bool
	certsDir   string
	events     func(action eventtypes.Action, ref reference.Named)
}

// event reports a pull or push of ref.
func (s *Service) event(action eventtypes.Action, ref reference.Named) {
	if s.events != nil {
		s.events(action, ref)
	}
}

// dockerHub is the registry unqualified names resolve to.
const dockerHub = "docker.io"

// New checks cfg and returns the service.
func New(cfg Config, store *image.Store) (*Service, error) {
	s := &Service{store: store, insecure: map[string]bool{}, events: cfg.Events}
	for _, r := range cfg.InsecureRegistries {
		r = strings.TrimSpace(r)
		r = strings.TrimPrefix(strings.TrimPrefix(r, "http://"), "https://")
		if r == "" {
			continue
		}
		if _, n, err := net.ParseCIDR(r); err == nil {
			s.nets = append(s.nets, n)
			continue
		}
		if strings.Contains(r, "/") {
			return nil, errdefs.InvalidParameter(fmt.Errorf("insecure registry %s is not valid: it must be host[:port] or a CIDR", r))
		}
		s.insecure[r] = true
	}
	s.mirrors, s.mirrorURLs = map[string][]string{}, map[string][]string{}
	if err := s.addMirrors(dockerHub, cfg.Mirrors); err != nil {
		return nil, err
	}
	for host, urls := range cfg.MirrorsFor {
		if host == "" || strings.ContainsAny(host, "/ ") {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid registry %q for mirrors: it must be host[:port]", host))
		}
		if host == "index.docker.io" || host == "registry-1.docker.io" {
			host = dockerHub
		}
		if err := s.addMirrors(host, urls); err != nil {
			return nil, err
		}
	}
	if err := s.setSearchList(cfg.AddRegistries, cfg.BlockRegistries); err != nil {
		return nil, err
	}
	s.certsDir = cfg.CertsDir
	return s, nil
}

// addMirrors adds mirrors (http:// or https:// URLs, no path) for the
// registry host.
func (s *Service) addMirrors(host string, urls []string) error {
	for _, m := range urls {
		u, err := url.Parse(strings.TrimSpace(m))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid mirror: %q is not a valid URI", m))
		}
		if strings.Trim(u.Path, "/") != "" {
			return errdefs.InvalidParameter(fmt.Errorf("invalid mirror %q: a mirror serves the registry's paths at its root, so it has no path", m))
		}
		if u.Scheme == "http" {
			// A mirror named by an http:// URL is spoken to in plain HTTP.
			s.insecure[u.Host] = true
		}
		s.mirrors[host] = append(s.mirrors[host], u.Host)
		s.mirrorURLs[host] = append(s.mirrorURLs[host], strings.TrimSuffix(u.String(), "/")+"/")
	}
	return nil
}

// ServiceConfig is the registry configuration `docker info` shows: the
// insecure CIDRs (loopback always), and an index entry for Docker Hub and
// for each registry with mirrors.
func (s *Service) ServiceConfig() *registry.ServiceConfig {
	sc := &registry.ServiceConfig{
		IndexConfigs: map[string]*registry.IndexInfo{},
		Mirrors:      slices.Clone(s.mirrorURLs[dockerHub]),
	}
	if sc.Mirrors == nil {
		sc.Mirrors = []string{}
	}
	_, lo, _ := net.ParseCIDR("127.0.0.0/8")
	_, lo6, _ := net.ParseCIDR("::1/128")
	for _, n := range append([]*net.IPNet{lo, lo6}, s.nets...) {
		sc.InsecureRegistryCIDRs = append(sc.InsecureRegistryCIDRs, (*registry.NetIPNet)(n))
	}
	hosts := slices.Sorted(maps.Keys(s.insecure))
	hosts = append(hosts, slices.Sorted(maps.Keys(s.mirrorURLs))...)
	hosts = append(hosts, dockerHub)
	for _, h := range hosts {
		if _, ok := sc.IndexConfigs[h]; ok {
			continue
		}
		mirrors := slices.Clone(s.mirrorURLs[h])
		if mirrors == nil {
			mirrors = []string{}
		}
		sc.IndexConfigs[h] = &registry.IndexInfo{Name: h, Mirrors: mirrors, Secure: !s.isInsecure(h), Official: h == dockerHub}
	}
	return sc
}

// isInsecure says whether host (as in a reference: "host[:port]") may be
// reached over plain HTTP or without verifying its certificate: listed in
// insecure-registries, inside a listed CIDR, or loopback, as in Docker.
func (s *Service) isInsecure(host string) bool {
	if s.insecure[host] {
		return true
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if s.insecure[h] || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	if ip == nil {
		// A name: its addresses decide (Docker resolves it too); only
		// loopback and listed CIDRs count, so no lookup without them.
		if len(s.nets) == 0 {
			return false
		}
		addrs, err := net.LookupIP(h)
		if err != nil {
			return false
		}
		for _, a := range addrs {
			if s.ipInsecure(a) {
				return true
			}
		}
		return false
	}
	return s.ipInsecure(ip)
}

func (s *Service) ipInsecure(ip net.IP) bool {
	if ip.IsLoopback() {
		return true
	}
	for _, n := range s.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// registryFor names host for go-containerregistry: insecure registries
// may fall back to plain HTTP.
func (s *Service) registryFor(host string) (name.Registry, error) {
	var opts []name.Option
	if s.isInsecure(host) {
		opts = append(opts, name.Insecure)
	}
	if host == dockerHub {
		host = name.DefaultRegistry
	}
	r, err := name.NewRegistry(host, opts...)
	if err != nil {
		return name.Registry{}, errdefs.InvalidParameter(fmt.Errorf("invalid registry %q: %w", host, err))
	}
	return r, nil
}

// transportFor is go-containerregistry's default transport (proxies from
// the environment, its timeouts) with host's TLS configuration: the
// certificates of its certs.d directory, and no verification for an
// insecure registry.
func (s *Service) transportFor(host string) http.RoundTripper {
	cfg, err := s.registryTLS(host)
	if err != nil {
		return failingTransport{err: err}
	}
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	return t
}

// endpoint is one registry a repository may be fetched from.
type endpoint struct {
	host   string
	mirror bool
}

// endpoints lists where named may be pulled from: its registry's mirrors
// first, then the registry.
func (s *Service) endpoints(named reference.Named) []endpoint {
	host := reference.Domain(named)
	var eps []endpoint
	for _, m := range s.mirrors[host] {
		eps = append(eps, endpoint{host: m, mirror: true})
	}
	return append(eps, endpoint{host: host})
}

// repository is named's repository on the endpoint's registry.
func (s *Service) repository(ep endpoint, named reference.Named) (name.Repository, error) {
	reg, err := s.registryFor(ep.host)
	if err != nil {
		return name.Repository{}, err
	}
	return reg.Repo(reference.Path(named)), nil
}

// authenticator turns the client's AuthConfig (X-Registry-Auth, or the
// body of POST /auth) into go-containerregistry's; nothing given is
// anonymous. Credentials are never sent to a mirror.
func authenticator(ac registry.AuthConfig, ep endpoint) authn.Authenticator {
	if ep.mirror || (ac.Username == "" && ac.Password == "" && ac.Auth == "" && ac.IdentityToken == "" && ac.RegistryToken == "") {
		return authn.Anonymous
	}
	return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
		IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken})
}

func hasAuth(ac registry.AuthConfig) bool {
	return ac.Username != "" || ac.Password != "" || ac.Auth != "" || ac.IdentityToken != "" || ac.RegistryToken != ""
}
