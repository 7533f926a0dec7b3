package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
	"github.com/sdengine/engine/pkg/inroot"
)

// NewCpCommand is "docker cp": CONTAINER:SRC DEST, or SRC CONTAINER:DEST,
// with "-" for a tar stream on stdin or stdout. Host paths are read and
// written with pkg/inroot too: an archive from a container cannot write
// outside the destination, whatever links it holds.
func NewCpCommand(cli *command.Cli) *cobra.Command {
	var followLink, archive, quiet bool
	cmd := &cobra.Command{
		Use:   "cp [OPTIONS] CONTAINER:SRC_PATH DEST_PATH|-\n\tdocker cp [OPTIONS] SRC_PATH|- CONTAINER:DEST_PATH",
		Short: "Copy files/folders between a container and the local filesystem",
		Args:  command.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			srcCtr, srcPath := splitCpArg(args[0])
			dstCtr, dstPath := splitCpArg(args[1])
			switch {
			case srcCtr != "" && dstCtr != "":
				return errors.New("copying between containers is not supported")
			case srcCtr == "" && dstCtr == "":
				return errors.New("must specify at least one container source")
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if srcCtr != "" {
				if srcPath == "" {
					return errors.New("source path cannot be empty")
				}
				if followLink {
					st, err := c.ContainerStatPath(ctx, srcCtr, srcPath)
					if err == nil && st.Mode&os.ModeSymlink != 0 && st.LinkTarget != "" {
						srcPath = st.LinkTarget
					}
				}
				rc, st, err := c.CopyFromContainer(ctx, srcCtr, srcPath)
				if err != nil {
					return err
				}
				defer rc.Close()
				if dstPath == "-" {
					_, err := io.Copy(cli.Out(), rc)
					return err
				}
				n, err := extractToHost(rc, st, srcPath, dstPath)
				if err == nil && !quiet {
					fmt.Fprintf(cli.Err(), "Successfully copied %s to %s\n", units.HumanSizeWithPrecision(float64(n), 3), dstPath)
				}
				return err
			}
			if dstPath == "" {
				return errors.New("destination path cannot be empty")
			}
			opts := container.CopyToContainerOptions{CopyUIDGID: archive}
			if srcPath == "-" {
				return c.CopyToContainer(ctx, dstCtr, dstPath, cli.In(), opts)
			}
			dstDir, arcName, err := cpTarget(c.ContainerStatPath, ctx, dstCtr, srcPath, dstPath, followLink)
			if err != nil {
				return err
			}
			pr, pw := io.Pipe()
			counter := &countingWriter{w: pw}
			go func() { pw.CloseWithError(tarHostPath(srcPath, arcName, followLink, counter)) }()
			if err := c.CopyToContainer(ctx, dstCtr, dstDir, pr, opts); err != nil {
				pr.CloseWithError(err)
				return err
			}
			if !quiet {
				fmt.Fprintf(cli.Err(), "Successfully copied %s to %s:%s\n", units.HumanSizeWithPrecision(float64(counter.n), 3), dstCtr, dstPath)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&followLink, "follow-link", "L", false, "Always follow symbol link in SRC_PATH")
	fs.BoolVarP(&archive, "archive", "a", false, "Archive mode (copy all uid/gid information)")
	fs.BoolVarP(&quiet, "quiet", "q", false, "Suppress progress output during copy")
	return cmd
}

// splitCpArg splits "CONTAINER:PATH"; a path with a "/" before any ":"
// (or starting with ".") is a local path.
func splitCpArg(arg string) (ctr, p string) {
	if filepath.IsAbs(arg) || strings.HasPrefix(arg, ".") {
		return "", arg
	}
	ctr, p, ok := strings.Cut(arg, ":")
	if !ok || strings.Contains(ctr, "/") {
		return "", arg
	}
	return ctr, p
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type statFunc = func(ctx context.Context, ctr, p string) (container.PathStat, error)

// cpTarget decides, as docker's CLI does, the directory of the container
// the archive is extracted into and the name the source takes there:
// into an existing directory under its own name (or its contents, for
// SRC/.), over an existing file, or as a new DEST.
func cpTarget(stat statFunc, ctx context.Context, ctr, src, dst string, follow bool) (dir, name string, err error) {
	fi, err := os.Lstat(src)
	if err != nil {
		return "", "", err
	}
	if follow {
		if fi, err = os.Stat(src); err != nil {
			return "", "", err
		}
	}
	contents := strings.HasSuffix(src, "/.") || src == "."
	st, serr := stat(ctx, ctr, dst)
	switch {
	case serr == nil && st.Mode.IsDir():
		if contents {
			return dst, ".", nil
		}
		return dst, filepath.Base(src), nil
	case serr == nil:
		if fi.IsDir() {
			return "", "", fmt.Errorf("cannot copy a directory to a file: %s", dst)
		}
		return path.Dir(dst), path.Base(dst), nil
	default:
		if strings.HasSuffix(dst, "/") {
			if !fi.IsDir() {
				return "", "", fmt.Errorf("destination directory %s does not exist: %w", dst, serr)
			}
		}
		return path.Dir(strings.TrimSuffix(dst, "/")), path.Base(dst), nil
	}
}

// tarHostPath writes src as a tar whose top entry is named name.
func tarHostPath(src, name string, follow bool, w io.Writer) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	contents := strings.HasSuffix(src, "/.") || src == "."
	if contents {
		r, err := inroot.Open(abs)
		if err != nil {
			return err
		}
		defer r.Close()
		return r.Tar("/", ".", w)
	}
	r, err := inroot.Open(filepath.Dir(abs))
	if err != nil {
		return err
	}
	defer r.Close()
	p := "/" + filepath.Base(abs)
	if follow {
		p += "/."
		if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
			// A link to a file: its target's parent is the root.
			real, err := filepath.EvalSymlinks(abs)
			if err != nil {
				return err
			}
			r2, err := inroot.Open(filepath.Dir(real))
			if err != nil {
				return err
			}
			defer r2.Close()
			return r2.Tar("/"+filepath.Base(real), name, w)
		}
	}
	return r.Tar(p, name, w)
}

// extractToHost unpacks an archive from a container at dst, as docker's
// CLI does: into an existing directory, or as dst itself; it returns the
// bytes of file content written.
func extractToHost(rc io.Reader, st container.PathStat, src, dst string) (int64, error) {
	base := st.Name
	contents := strings.HasSuffix(src, "/.") || src == "."
	into, rename := dst, ""
	fi, err := os.Stat(dst)
	switch {
	case err == nil && fi.IsDir():
		if contents {
			rename = "."
		}
	case err == nil:
		if st.Mode.IsDir() {
			return 0, fmt.Errorf("cannot copy a directory to a file: %s", dst)
		}
		into, rename = filepath.Dir(dst), filepath.Base(dst)
	case os.IsNotExist(err):
		if strings.HasSuffix(dst, string(filepath.Separator)) && !st.Mode.IsDir() {
			return 0, fmt.Errorf("destination directory %s does not exist", dst)
		}
		into, rename = filepath.Dir(filepath.Clean(dst)), filepath.Base(dst)
		if contents {
			if err := os.Mkdir(dst, 0o755); err != nil {
				return 0, err
			}
			into, rename = dst, "."
		}
	default:
		return 0, err
	}
	r, err := inroot.Open(into)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cr := &countingReader{r: rc}
	opts := inroot.ExtractOptions{NoChown: os.Geteuid() != 0}
	if rename != "" {
		opts.Rename = func(n string) string {
			var rest string
			switch base {
			case "/":
				rest = strings.TrimPrefix(n, "/")
			case ".":
				rest = strings.TrimPrefix(strings.TrimPrefix(n, "."), "/")
			default:
				rest = strings.TrimPrefix(strings.TrimPrefix(n, base), "/")
			}
			return path.Join(rename, rest)
		}
	}
	err = r.Extract("/", cr, opts)
	return cr.n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
