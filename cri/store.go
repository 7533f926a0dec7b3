package cri

import (
	"encoding/json"
	"fmt"
	"github.com/sdengine/engine/cri/podinfra"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/pkg/atomicfile"
)

// sandbox is a pod sandbox's record, one JSON file each.
type sandbox struct {
	ID        string
	CreatedAt int64 // ns since the epoch
	Ready     bool
	// Handler is the runtime handler the pod asked for ("" or "runc").
	Handler string
	// Config is the PodSandboxConfig as the kubelet sent it (protojson).
	Config json.RawMessage
	// Dir holds the pinned namespaces, /etc files and shm (below RunRoot).
	Dir string
	// Pinned namespace files; empty for the host's.
	NetNS, IPCNS, UTSNS string `json:",omitempty"`
	// HostPID: the pod's containers share the host's PID namespace.
	HostPID bool `json:",omitempty"`
	// Infra is the PID 1 of the PID namespace the pod's containers share
	// (shareProcessNamespace); nil when each has its own.
	Infra *podinfra.Process `json:",omitempty"`
	// ShmDir is the pod's /dev/shm; mounted by the sandbox when ShmOwned.
	ShmDir   string `json:",omitempty"`
	ShmOwned bool   `json:",omitempty"`
	// IPs are the pod's addresses from CNI, the primary one first.
	IPs []string `json:",omitempty"`

	config *runtimeapi.PodSandboxConfig // decoded Config
}

// sandboxName is a pod's identity among its attempts: a second sandbox
// with the same metadata while the first exists is refused.
func sandboxName(m *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", m.Name, m.Namespace, m.Uid, m.Attempt)
}

// sandboxStore keeps the records in memory and on disk.
type sandboxStore struct {
	dir string
	mu  sync.Mutex
	all map[string]*sandbox
	// byName reserves a name from RunPodSandbox's start to the removal.
	byName map[string]string
}

func loadSandboxes(dir string) (*sandboxStore, error) {
	st := &sandboxStore{dir: dir, all: map[string]*sandbox{}, byName: map[string]string{}}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var sb sandbox
		if err := json.Unmarshal(b, &sb); err != nil {
			return nil, fmt.Errorf("sandbox record %s: %w", e.Name(), err)
		}
		sb.config = &runtimeapi.PodSandboxConfig{}
		if err := protojson.Unmarshal(sb.Config, sb.config); err != nil {
			return nil, fmt.Errorf("sandbox record %s: %w", e.Name(), err)
		}
		// A sandbox whose namespaces went with a reboot is not ready.
		if sb.NetNS != "" {
			if _, err := os.Stat(sb.NetNS); err != nil {
				sb.Ready = false
			}
		}
		st.all[sb.ID] = &sb
		st.byName[sandboxName(sb.config.Metadata)] = sb.ID
	}
	return st, nil
}

// reserve claims the pod's name for id.
func (st *sandboxStore) reserve(name, id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if other, ok := st.byName[name]; ok {
		return fmt.Errorf("pod sandbox name %q is reserved for %s", name, other)
	}
	st.byName[name] = id
	return nil
}

func (st *sandboxStore) release(name, id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.byName[name] == id {
		delete(st.byName, name)
	}
}

// save writes sb's record and makes it visible.
func (st *sandboxStore) save(sb *sandbox) error {
	cfg, err := protojson.Marshal(sb.config)
	if err != nil {
		return err
	}
	sb.Config = cfg
	b, err := json.Marshal(sb)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(st.dir, sb.ID+".json"), b, 0o600); err != nil {
		return fmt.Errorf("save sandbox %s: %w", sb.ID, err)
	}
	st.mu.Lock()
	st.all[sb.ID] = sb
	st.mu.Unlock()
	return nil
}

// remove forgets sb and frees its name.
func (st *sandboxStore) remove(sb *sandbox) error {
	if err := os.Remove(filepath.Join(st.dir, sb.ID+".json")); err != nil && !os.IsNotExist(err) {
		return err
	}
	st.mu.Lock()
	delete(st.all, sb.ID)
	if st.byName[sandboxName(sb.config.Metadata)] == sb.ID {
		delete(st.byName, sandboxName(sb.config.Metadata))
	}
	st.mu.Unlock()
	return nil
}

// get finds a sandbox by its ID or a unique prefix of it.
func (st *sandboxStore) get(id string) (*sandbox, error) {
	if id == "" {
		return nil, invalid("pod sandbox ID is empty")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if sb, ok := st.all[id]; ok {
		return sb, nil
	}
	var found *sandbox
	for k, sb := range st.all {
		if strings.HasPrefix(k, id) {
			if found != nil {
				return nil, invalid("pod sandbox ID prefix %q is ambiguous", id)
			}
			found = sb
		}
	}
	if found == nil {
		return nil, notFound("pod sandbox %q not found", id)
	}
	return found, nil
}

// list is every sandbox, oldest first.
func (st *sandboxStore) list() []*sandbox {
	st.mu.Lock()
	out := make([]*sandbox, 0, len(st.all))
	for _, sb := range st.all {
		out = append(out, sb)
	}
	st.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out
}
