//go:build integration

package integrationcli

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tarOf builds a tar from (name, body) pairs; a body starting with "->"
// makes a symlink to the rest.
func tarOf(t testing.TB, entries ...[2]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg}
		if strings.HasSuffix(e[0], "/") {
			h = &tar.Header{Name: e[0], Mode: 0o755, Typeflag: tar.TypeDir}
		} else if target, ok := strings.CutPrefix(e[1], "->"); ok {
			h = &tar.Header{Name: e[0], Linkname: target, Typeflag: tar.TypeSymlink, Mode: 0o777}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e[1]))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestImageCommands(t *testing.T) {
	clis(t, shared, func(t *testing.T, cli func(...string) Result) {
		tag := "it-" + strings.ToLower(filepath.Base(t.Name()))
		if r := cli("tag", "busybox", tag+":v1"); r.Code != 0 {
			t.Fatalf("tag: %s", r)
		}
		id := strings.TrimSpace(cli("image", "inspect", "--format", "{{.Id}}", "busybox").Stdout)
		if !strings.HasPrefix(id, "sha256:") {
			t.Fatalf("image inspect: %q", id)
		}
		if out := cli("images", "--format", "{{.Repository}}:{{.Tag}}", tag).Stdout; out != tag+":v1\n" {
			t.Fatalf("images REPO filter: %q", out)
		}
		if out := cli("images", "-q", "--no-trunc").Stdout; !strings.Contains(out, id) {
			t.Fatalf("images -q: %q", out)
		}
		if out := cli("images").Stdout; !strings.HasPrefix(out, "REPOSITORY") || !strings.Contains(out, "busybox") {
			t.Fatalf("images table: %q", out)
		}
		ctr := remember(cli("create", tag+":v1").Stdout)
		r := cli("rmi", id)
		if r.Code == 0 {
			t.Fatalf("rmi of an image in use by ID succeeded: %s", r)
		}
		if r := cli("rmi", tag+":v1"); r.Code != 0 || !strings.Contains(r.Stdout, "Untagged: "+tag+":v1") {
			t.Fatalf("rmi of a second tag: %s", r)
		}
		cli("rm", ctr)
		if r := cli("rmi", "no-such-image:here"); r.Code == 0 || !strings.Contains(r.Stderr, "No such image") {
			t.Fatalf("rmi of missing image: %s", r)
		}
		r = cli("run", "--rm", "no-such-image:here")
		if r.Code != 125 || !strings.Contains(strings.ToLower(r.Stderr), "no such image") && !strings.Contains(r.Stderr, "Unable to find image") {
			t.Fatalf("run of missing image: %s", r)
		}
	})
}

func TestImportChangesAndStdin(t *testing.T) {
	data := tarOf(t, [2]string{"bin/", ""}, [2]string{"hello.txt", "imported\n"})
	img := "it-import:stdin"
	r := shared.CLIStdin(string(data), "import", "-c", "ENV GREETING=hi", "-c", "WORKDIR /srv", "-", img)
	if r.Code != 0 || !strings.Contains(r.Stdout, "sha256:") {
		t.Fatalf("import from stdin: %s", r)
	}
	out := shared.MustCLI(t, "image", "inspect", "--format", "{{.Config.Env}} {{.Config.WorkingDir}}", img)
	if out != "[GREETING=hi] /srv" {
		t.Fatalf("changes: %q", out)
	}
	shared.MustCLI(t, "rmi", img)
}

// Hostile tars: nothing may be written outside the layer, and the error
// must say what was wrong.
func TestImportRejectsHostileTars(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	cases := map[string][]byte{
		"dotdot":    tarOf(t, [2]string{"../../../../../../../.." + victim, "pwned"}),
		"symlink":   tarOf(t, [2]string{"escape", "->" + filepath.Dir(victim)}, [2]string{"escape/victim", "pwned"}),
		"truncated": tarOf(t, [2]string{"big.txt", strings.Repeat("x", 10000)})[:2000],
	}
	for name, data := range cases {
		f := filepath.Join(t.TempDir(), name+".tar")
		os.WriteFile(f, data, 0o644)
		r := shared.CLI("import", f, "it-hostile:"+name)
		if _, err := os.Stat(victim); err == nil {
			t.Fatalf("%s: wrote outside the layer", name)
		}
		if name == "truncated" && r.Code == 0 {
			t.Errorf("truncated tar imported: %s", r)
		}
		if name != "truncated" && r.Code == 0 {
			// Docker's answer to a hostile path is to refuse it or to keep it
			// inside the layer; either way the host file must not exist.
			shared.CLI("rmi", "it-hostile:"+name)
		}
	}
}

// docker load of a `docker save` tar and of an OCI layout, built here.
func TestLoad(t *testing.T) {
	layer := tarOf(t, [2]string{"bin/", ""}, [2]string{"bin/busybox", "placeholder"}, [2]string{"loaded.txt", "from load\n"})
	diff := sha256.Sum256(layer)
	diffID := "sha256:" + hex.EncodeToString(diff[:])
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Cmd": []string{"cat", "/loaded.txt"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	cfgSum := sha256.Sum256(cfg)
	cfgHex := hex.EncodeToString(cfgSum[:])
	manifest, _ := json.Marshal([]map[string]any{{
		"Config": cfgHex + ".json", "RepoTags": []string{"it-load:save"}, "Layers": []string{"abc/layer.tar"},
	}})
	saveTar := tarOf(t, [2]string{"abc/", ""}, [2]string{"abc/layer.tar", string(layer)},
		[2]string{cfgHex + ".json", string(cfg)}, [2]string{"manifest.json", string(manifest)})
	f := filepath.Join(t.TempDir(), "save.tar")
	os.WriteFile(f, saveTar, 0o644)
	r := shared.CLI("load", "-i", f)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Loaded image: it-load:save") {
		t.Fatalf("load: %s", r)
	}
	if out := shared.MustCLI(t, "image", "inspect", "--format", "{{.Id}}", "it-load:save"); out != "sha256:"+cfgHex {
		t.Fatalf("loaded image ID %s, want the config digest sha256:%s", out, cfgHex)
	}

	// The same image as an OCI layout.
	layerSum := diff
	mf, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + cfgHex, "size": len(cfg)},
		"layers": []map[string]any{{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": diffID, "size": len(layer)}},
	})
	mfSum := sha256.Sum256(mf)
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []map[string]any{{
			"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + hex.EncodeToString(mfSum[:]), "size": len(mf),
			"annotations": map[string]string{"org.opencontainers.image.ref.name": "it-load:oci"},
		}},
	})
	ociTar := tarOf(t, [2]string{"oci-layout", `{"imageLayoutVersion":"1.0.0"}`}, [2]string{"index.json", string(index)},
		[2]string{"blobs/", ""}, [2]string{"blobs/sha256/", ""},
		[2]string{"blobs/sha256/" + cfgHex, string(cfg)},
		[2]string{"blobs/sha256/" + hex.EncodeToString(layerSum[:]), string(layer)},
		[2]string{"blobs/sha256/" + hex.EncodeToString(mfSum[:]), string(mf)})
	r = shared.CLIStdin(string(ociTar), "load")
	if r.Code != 0 {
		t.Fatalf("load OCI layout: %s", r)
	}
	if out := shared.MustCLI(t, "image", "inspect", "--format", "{{.Id}}", "it-load:oci"); out != "sha256:"+cfgHex {
		t.Fatalf("OCI image ID %s", out)
	}
	shared.MustCLI(t, "rmi", "it-load:save", "it-load:oci")

	// A load whose manifest points outside the archive is refused.
	evil, _ := json.Marshal([]map[string]any{{"Config": "../../etc/passwd", "RepoTags": []string{"it-load:evil"}, "Layers": []string{"../../etc/shadow"}}})
	r = shared.CLIStdin(string(tarOf(t, [2]string{"manifest.json", string(evil)})), "load")
	if r.Code == 0 {
		t.Fatalf("load with ../ paths succeeded: %s", r)
	}
	fmt.Fprint(os.Stderr, "")
}
