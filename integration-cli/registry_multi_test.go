//go:build integration

package integrationcli

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestRegistryIndexMultiLayer puts an OCI index with two platforms of a
// 5-layer image (100 MB of incompressible content) into the registry,
// then pulls it: the host's platform by default, the other with
// --platform; and pushes it to a second registry. It logs the times.
func TestRegistryIndexMultiLayer(t *testing.T) {
	reg := startRegistry(t, false)
	reg2 := startRegistry(t, false)
	d := NewDaemon(t)
	d.Start(t)
	defer d.Cleanup(t)

	mk := func(arch string) v1.Image {
		img, err := random.Image(20<<20, 5)
		if err != nil {
			t.Fatal(err)
		}
		img = mutate.MediaType(img, types.OCIManifestSchema1)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		img, err = mutate.ConfigFile(img, cf)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	host, foreign := mk(runtime.GOARCH), mk(other)
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: host, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
		mutate.IndexAddendum{Add: foreign, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}})
	ref, err := name.ParseReference(reg.Addr+"/big:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	hostCfg, _ := host.ConfigName()
	foreignCfg, _ := foreign.ConfigName()

	start := time.Now()
	r := d.Stock("pull", reg.Addr+"/big:v1")
	pullTime := time.Since(start)
	if r.Code != 0 || strings.Count(r.Stdout, "Pull complete") != 5 || !strings.Contains(r.Stdout, "Digest: "+idxDigest.String()) {
		t.Fatalf("pull: %s", r)
	}
	if id, rd := inspectImage(t, d, reg.Addr+"/big:v1"); id != hostCfg.String() || !contains(rd, reg.Addr+"/big@"+idxDigest.String()) {
		t.Fatalf("pulled %s %v, want the host's image %s", id, rd, hostCfg)
	}
	t.Logf("pull of a 5-layer 100 MB image from a loopback registry: %v", pullTime)

	r = d.Stock("pull", "--platform", "linux/"+other, reg.Addr+"/big:v1")
	if r.Code != 0 {
		t.Fatalf("pull --platform linux/%s: %s", other, r)
	}
	if id, _ := inspectImage(t, d, reg.Addr+"/big:v1"); id != foreignCfg.String() {
		t.Fatalf("pulled %s for linux/%s, want %s", id, other, foreignCfg)
	}

	d.MustCLI(t, "tag", hostCfg.String(), reg2.Addr+"/big:v1")
	start = time.Now()
	r = d.Stock("push", reg2.Addr+"/big:v1")
	pushTime := time.Since(start)
	if r.Code != 0 || strings.Count(r.Stdout, "Pushed") != 5 {
		t.Fatalf("push: %s", r)
	}
	t.Logf("push of the same image to another loopback registry: %v", pushTime)

	// Pulled back from the second registry: same image ID.
	d.MustCLI(t, "rmi", "-f", hostCfg.String())
	start = time.Now()
	if r := d.Stock("pull", reg2.Addr+"/big:v1"); r.Code != 0 {
		t.Fatalf("pull back: %s", r)
	}
	t.Logf("pull of the pushed (docker schema 2, gzip) image: %v", time.Since(start))
	if id, _ := inspectImage(t, d, reg2.Addr+"/big:v1"); id != hostCfg.String() {
		t.Fatalf("pulled back %s, want %s", id, hostCfg)
	}
}
