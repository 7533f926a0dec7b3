package cri

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCheckUserns(t *testing.T) {
	mapping := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 1000, Length: 100000}}
	for _, tc := range []struct {
		name string
		opts *runtimeapi.UserNamespace
		want codes.Code
	}{
		{"none", nil, codes.OK},
		{"node", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, codes.OK},
		{"node with mappings", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE, Uids: mapping, Gids: mapping}, codes.InvalidArgument},
		{"pod", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping, Gids: mapping}, codes.Unimplemented},
		{"container", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}, codes.InvalidArgument},
		{"target", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_TARGET}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(checkUserns(tc.opts)); got != tc.want {
				t.Fatalf("checkUserns(%v): code %v, want %v", tc.opts, got, tc.want)
			}
		})
	}
}
