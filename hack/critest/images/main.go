// Command images makes the images cri-tools' critest pulls, from the
// busybox rootfs of hack/images/busybox.sh, and pushes them to a registry
// (Debian's docker-registry on loopback): nothing is pulled from the
// internet.
//
//	images build -busybox ROOTFS.tar -nnp NNP -cache DIR   # prints the OCI layout's path
//	images push -layout DIR -registry 127.0.0.1:5000
//
// build writes an OCI image layout whose manifests are annotated with the
// image's name without its registry (e2e-test-images/busybox:1.29-2),
// under DIR/critest-RECIPE-BUSYBOX, and does nothing when it is already
// there. push writes each of them as REGISTRY/NAME.
//
// What each image must hold comes from critest v1.37.0's tests and the
// Dockerfiles of cri-tools' images/: most are busybox with a file or a
// USER of their own. nginx and httpd are stood in for by busybox's httpd
// (the tests only fetch a page, find the process and its pid file), the
// nonewprivs image's program is hack/critest/nnp installed set-user-ID
// root.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// recipe names what build puts in the images: bump it with every change
// to them, so that a layout made by an older recipe is neither reused nor
// overwritten (as hack/images/busybox.sh does).
const recipe = "r3"

const refAnnotation = "org.opencontainers.image.ref.name"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: images build|push [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		slog.Error("images", "err", err)
		os.Exit(1)
	}
}

// file is one entry of a layer made here.
type file struct {
	path string
	mode int64 // with tar's type bits: a directory has 0o40000 set
	body string
}

const dir = 0o40000

// image is one image critest pulls: its names (path:tag, without the
// registry) and what it adds to busybox.
type image struct {
	names  []string
	files  []file
	config v1.Config
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	busybox := fs.String("busybox", "", "the busybox rootfs tarball (hack/images/busybox.sh)")
	nnp := fs.String("nnp", "", "the nonewprivs program (hack/critest/nnp), built static")
	cache := fs.String("cache", "", "directory the layout goes under")
	_ = fs.Parse(args)
	if *busybox == "" || *nnp == "" || *cache == "" {
		return errors.New("build needs -busybox, -nnp and -cache")
	}
	out := filepath.Join(*cache, "critest-"+recipe+"-"+strings.TrimSuffix(filepath.Base(*busybox), ".tar"))
	if _, err := os.Stat(filepath.Join(out, "index.json")); err == nil {
		fmt.Println(out)
		return nil
	}
	passwd, group, err := readUsers(*busybox)
	if err != nil {
		return err
	}
	nnpBin, err := os.ReadFile(*nnp)
	if err != nil {
		return fmt.Errorf("read nnp: %w", err)
	}
	images := catalog(passwd, group, string(nnpBin))

	base, err := hardlinkedApplets(*busybox)
	if err != nil {
		return fmt.Errorf("busybox layer: %w", err)
	}
	tools, err := layerOf(toolFiles())
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	for _, im := range images {
		img, err := mutate.AppendLayers(empty.Image, base, tools)
		if err != nil {
			return err
		}
		if len(im.files) > 0 {
			l, err := layerOf(im.files)
			if err != nil {
				return err
			}
			if img, err = mutate.AppendLayers(img, l); err != nil {
				return err
			}
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		cf.Architecture, cf.OS = runtime.GOARCH, "linux"
		cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
		cf.Config = im.config
		cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, cf.Config.Env...)
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return err
		}
		for _, n := range im.names {
			if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{refAnnotation: n})); err != nil {
				return fmt.Errorf("write %s: %w", n, err)
			}
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Println(out)
	return nil
}

// catalog is every image critest v1.37.0 pulls on Linux, but
// test-image-digest, whose digest the tests name (no other content has
// it).
func catalog(passwd, group, nnp string) []image {
	sh := v1.Config{Cmd: []string{"sh"}}
	marker := func(n string) []file { return []file{{path: n, mode: 0o644}} }
	withUser := func(u string) v1.Config { return v1.Config{Cmd: []string{"sh"}, User: u} }
	const cri = "k8s-staging-cri-tools/"
	return []image{
		{names: []string{"e2e-test-images/busybox:1.29-2"}, config: sh},
		{
			names:  []string{"e2e-test-images/nginx:1.14-2"},
			files:  nginx(80),
			config: nginxConfig(80),
		},
		{
			// hostNetWebServerImage: nginx on port 12003.
			names:  []string{cri + "hostnet-nginx-" + runtime.GOARCH + ":latest"},
			files:  nginx(12003),
			config: nginxConfig(12003),
		},
		{
			names: []string{"e2e-test-images/httpd:2.4.39-4"},
			files: []file{
				{path: "usr/local/bin", mode: dir | 0o755},
				{path: "usr/local/bin/httpd-foreground", mode: 0o755, body: httpdForeground},
				{path: "usr/local/apache2", mode: dir | 0o755},
				{path: "usr/local/apache2/htdocs", mode: dir | 0o755},
				{path: "usr/local/apache2/htdocs/index.html", mode: 0o644, body: indexHTML},
			},
			config: v1.Config{Cmd: []string{"httpd-foreground"}, ExposedPorts: map[string]struct{}{"80/tcp": {}}},
		},
		{
			names: []string{"e2e-test-images/nonewprivs:1.3"},
			files: []file{
				{path: "usr/local/bin", mode: dir | 0o755},
				{path: "usr/local/bin/nnp", mode: 0o4755, body: nnp},
			},
			config: v1.Config{Entrypoint: []string{"/usr/local/bin/nnp"}},
		},
		// images/build's IMAGE_USERS.
		{names: []string{cri + "test-image-user-uid:latest"}, config: withUser("1002")},
		{names: []string{cri + "test-image-user-username:latest"}, config: withUser("www-data")},
		{names: []string{cri + "test-image-user-uid-group:latest"}, config: withUser("1003:1004")},
		{names: []string{cri + "test-image-user-username-group:latest"}, config: withUser("www-data:1004")},
		{
			// images/image-predefined-group: adduser -u 1000 -D default-user;
			// addgroup -g 50000 group-defined-in-image; addgroup default-user
			// group-defined-in-image; USER 1000.
			names: []string{cri + "test-image-predefined-group:latest"},
			files: []file{
				{path: "etc/passwd", mode: 0o644, body: passwd + "default-user:x:1000:1000:Linux User,,,:/home/default-user:/bin/sh\n"},
				{path: "etc/group", mode: 0o644, body: group + "default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n"},
				{path: "home/default-user", mode: dir | 0o755},
			},
			config: withUser("1000"),
		},
		// images/image-test: busybox plus an empty file named after the image.
		{names: []string{cri + "test-image-latest:latest"}, files: marker("test-image-latest"), config: sh},
		{names: []string{cri + "test-image-tag:test"}, files: marker("test"), config: sh},
		{names: []string{cri + "test-image-tag:all"}, files: marker("all"), config: sh},
		{names: []string{cri + "test-image-1:latest"}, files: marker("test-image-1"), config: sh},
		{names: []string{cri + "test-image-2:latest"}, files: marker("test-image-2"), config: sh},
		{names: []string{cri + "test-image-3:latest"}, files: marker("test-image-3"), config: sh},
		{
			names:  []string{cri + "test-image-tags:1", cri + "test-image-tags:2", cri + "test-image-tags:3"},
			files:  marker("same-image"),
			config: sh,
		},
		{
			// testSameImageDifferentRegistries: registry.k8s.io/pause:3.9 and
			// k8s.gcr.io/pause:3.9 must be one image.
			names:  []string{"pause:3.9"},
			files:  []file{{path: "pause", mode: 0o755, body: pauseScript}},
			config: v1.Config{Entrypoint: []string{"/pause"}},
		},
	}
}

func nginx(port int) []file {
	return []file{
		{path: "usr/sbin/nginx", mode: 0o755, body: fmt.Sprintf(nginxScript, port)},
		{path: "usr/share/nginx", mode: dir | 0o755},
		{path: "usr/share/nginx/html", mode: dir | 0o755},
		{path: "usr/share/nginx/html/index.html", mode: 0o644, body: indexHTML},
	}
}

// nginxConfig: the second word is the script's $1, so that the process's
// command line says "master process" as nginx's does (the PID namespace
// tests look for it in /proc/1/cmdline).
func nginxConfig(port int) v1.Config {
	return v1.Config{
		Cmd:          []string{"/usr/sbin/nginx", "nginx: master process nginx -g daemon off;"},
		ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", port): {}},
	}
}

const nginxScript = `#!/bin/sh
# Stands in for nginx: busybox httpd serves /usr/share/nginx/html on port
# %d. This shell stays the main process: its name is "nginx" (pidof nginx
# finds it), its pid goes to /var/run/nginx.pid as nginx's does.
echo $$ >/var/run/nginx.pid
httpd -f -p %[1]d -h /usr/share/nginx/html &
trap 'kill $! 2>/dev/null; exit 0' TERM INT QUIT
wait
`

const httpdForeground = `#!/bin/sh
# Stands in for Apache httpd: busybox httpd serves /usr/local/apache2/htdocs
# on port 80.
echo "httpd: serving /usr/local/apache2/htdocs on port 80"
httpd -f -p 80 -h /usr/local/apache2/htdocs &
trap 'kill $! 2>/dev/null; exit 0' TERM INT QUIT
wait
`

const indexHTML = "<!DOCTYPE html>\n<html><body><h1>It works!</h1></body></html>\n"

const pauseScript = `#!/bin/sh
trap 'exit 0' TERM INT QUIT
while :; do sleep 3600 & wait $!; done
`

// toolFiles are commands the tests run that Debian's busybox-static has
// no applet for; every image has them (upstream's are all busybox based).
func toolFiles() []file {
	return []file{
		{path: "usr/bin/pgrep", mode: 0o755, body: `#!/bin/sh
# pgrep NAME: pidof matches whole process names, which is what the tests
# ask (pgrep sleep).
pids=$(pidof "$@") || exit 1
for p in $pids; do echo "$p"; done
`},
		{path: "usr/bin/ipcs", mode: 0o755, body: `#!/bin/sh
# ipcs -m: the System V shared memory segments of this IPC namespace, from
# /proc/sysvipc/shm (the only use the tests make of ipcs).
echo "------ Shared Memory Segments --------"
echo "key        shmid      owner      perms      bytes      nattch"
awk 'NR > 1 { printf "%-10s %-10s %-10s %-10s %-10s %-10s\n", $1, $2, $8, $3, $4, $7 }' /proc/sysvipc/shm
`},
		{path: "var/run", mode: dir | 0o755},
	}
}

// layerOf is an uncompressed tar of files (root-owned, mtime 0), as a
// layer.
func layerOf(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode &^ dir, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.mode&dir != 0 {
			h.Typeflag, h.Name = tar.TypeDir, f.path+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// hardlinkedApplets is the busybox rootfs as a layer whose applets are
// hard links to /bin/busybox, as in the busybox images critest was written
// for, not the symbolic links of hack/images/busybox.sh: a spec masks
// /bin/ls (MaskedPaths) and expects only ls to go, where masking a symbolic
// link masks what it points to, busybox itself. bin/busybox is written
// first, so that every link follows its target.
func hardlinkedApplets(rootfs string) (v1.Layer, error) {
	f, err := os.Open(rootfs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var first, rest bytes.Buffer
	fw, rw := tar.NewWriter(&first), tar.NewWriter(&rest)
	tr := tar.NewReader(f)
	busybox := "bin/busybox"
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rootfs, err)
		}
		w := rw
		switch name := strings.TrimPrefix(h.Name, "./"); {
		case name == "bin/busybox":
			w, busybox = fw, h.Name
		case h.Typeflag == tar.TypeSymlink && (h.Linkname == "/bin/busybox" || strings.HasSuffix(h.Linkname, "bin/busybox")):
			h.Typeflag, h.Linkname = tar.TypeLink, busybox
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(w, tr); err != nil {
			return nil, err
		}
	}
	if err := rw.Close(); err != nil {
		return nil, err
	}
	if err := fw.Flush(); err != nil {
		return nil, err
	}
	b := append(first.Bytes(), rest.Bytes()...)
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// readUsers returns the rootfs's /etc/passwd and /etc/group.
func readUsers(rootfs string) (passwd, group string, err error) {
	f, err := os.Open(rootfs)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", fmt.Errorf("read %s: %w", rootfs, err)
		}
		var dst *string
		switch strings.TrimPrefix(h.Name, "./") {
		case "etc/passwd":
			dst = &passwd
		case "etc/group":
			dst = &group
		default:
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return "", "", err
		}
		*dst = string(b)
	}
	if passwd == "" || group == "" {
		return "", "", fmt.Errorf("%s has no /etc/passwd or /etc/group", rootfs)
	}
	return passwd, group, nil
}

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dirPath := fs.String("layout", "", "the OCI layout build wrote")
	registry := fs.String("registry", "127.0.0.1:5000", "registry to push to")
	_ = fs.Parse(args)
	idx, err := layout.ImageIndexFromPath(*dirPath)
	if err != nil {
		return fmt.Errorf("read layout: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	write := func(n string, h v1.Hash) error {
		img, err := idx.Image(h)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		ref, err := name.NewTag(*registry+"/"+n, name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		return nil
	}
	for _, d := range im.Manifests {
		n := d.Annotations[refAnnotation]
		if n == "" {
			continue
		}
		if err := write(n, d.Digest); err != nil {
			return err
		}
	}
	return nil
}
