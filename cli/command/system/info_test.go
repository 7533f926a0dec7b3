package system

import (
	"bytes"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/api/types/system"
)

// Docker's CLI prints the swarm state right after the plugins and before
// the runtimes; an inactive node gets that one line and nothing under it.
func TestInfoPrintsSwarmInactiveWhereDockerDoes(t *testing.T) {
	var out bytes.Buffer
	i := &system.Info{Swarm: swarm.Info{LocalNodeState: swarm.LocalNodeStateInactive}}
	i.Plugins.Log = []string{"json-file"}
	printInfo(&out, i, map[string]any{})
	want := "  Log: json-file\n Swarm: inactive\n Runtimes: \n"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("want %q in:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "NodeID") || strings.Contains(out.String(), "Is Manager") {
		t.Errorf("node details printed for an inactive node:\n%s", out.String())
	}
}

func TestInfoPrintsSwarmNodeDetailsWhenActive(t *testing.T) {
	var out bytes.Buffer
	i := &system.Info{Swarm: swarm.Info{
		LocalNodeState: swarm.LocalNodeStateActive, NodeID: "n1", NodeAddr: "192.0.2.1", ControlAvailable: true,
	}}
	printInfo(&out, i, map[string]any{})
	want := " Swarm: active\n  NodeID: n1\n  Is Manager: true\n  Node Address: 192.0.2.1\n Runtimes:"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("want %q in:\n%s", want, out.String())
	}
}
