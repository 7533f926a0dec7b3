package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stringid"
	units "github.com/docker/go-units"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
)

// NewBuildCommand is "docker build" with the classic builder's API.
func NewBuildCommand(cli *command.Cli) *cobra.Command {
	var (
		o         build.ImageBuildOptions
		buildArgs []string
		labels    []string
		iidfile   string
	)
	cmd := &cobra.Command{
		Use:   "build [OPTIONS] PATH | -",
		Short: "Build an image from a Dockerfile",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var body io.Reader
			if args[0] == "-" {
				body = cli.In()
			} else {
				var buf bytes.Buffer
				var extra []byte
				if o.Dockerfile != "" {
					// A Dockerfile from stdin or outside the context is
					// sent inside it under a name of its own, as docker does.
					abs, _ := filepath.Abs(o.Dockerfile)
					ctxAbs, _ := filepath.Abs(args[0])
					if rel, err := filepath.Rel(ctxAbs, abs); o.Dockerfile == "-" || err != nil || strings.HasPrefix(rel, "..") {
						var err error
						if o.Dockerfile == "-" {
							extra, err = io.ReadAll(cli.In())
						} else {
							extra, err = os.ReadFile(o.Dockerfile)
						}
						if err != nil {
							return err
						}
						o.Dockerfile = ".dockerfile." + stringid.GenerateRandomID()[:20]
					} else {
						o.Dockerfile = rel
					}
				}
				if err := tarContext(args[0], o.Dockerfile, extra, &buf); err != nil {
					return err
				}
				body = &buf
			}
			o.BuildArgs = map[string]*string{}
			for _, a := range buildArgs {
				k, v, ok := strings.Cut(a, "=")
				if !ok {
					// KEY alone takes the value from the environment.
					if ev, set := os.LookupEnv(k); set {
						o.BuildArgs[k] = &ev
					} else {
						o.BuildArgs[k] = nil
					}
					continue
				}
				o.BuildArgs[k] = &v
			}
			o.Labels = map[string]string{}
			for _, l := range labels {
				k, v, _ := strings.Cut(l, "=")
				o.Labels[k] = v
			}
			o.Version = build.BuilderV1
			o.AuthConfigs = buildAuthConfigs()
			c, err := cli.Client()
			if err != nil {
				return err
			}
			resp, err := c.ImageBuild(cmd.Context(), body, o)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var imageID string
			aux := func(m jsonmessage.JSONMessage) {
				var r build.Result
				if m.Aux != nil && json.Unmarshal(*m.Aux, &r) == nil && r.ID != "" {
					imageID = r.ID
				}
			}
			out := io.Writer(cli.Out())
			if o.SuppressOutput {
				out = io.Discard
			}
			err = jsonmessage.DisplayJSONMessagesStream(resp.Body, out, cli.Out().FD(), false, aux)
			var jerr *jsonmessage.JSONError
			if errors.As(err, &jerr) {
				code := jerr.Code
				if code == 0 {
					code = 1
				}
				return command.StatusError{Status: jerr.Message, StatusCode: code}
			}
			if err != nil {
				return err
			}
			if o.SuppressOutput {
				fmt.Fprintln(cli.Out(), imageID)
			}
			if iidfile != "" && imageID != "" {
				return os.WriteFile(iidfile, []byte(imageID), 0o666)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.Tags, "tag", "t", nil, `Name and optionally a tag in the "name:tag" format`)
	f.StringVarP(&o.Dockerfile, "file", "f", "", `Name of the Dockerfile (Default is "PATH/Dockerfile")`)
	f.BoolVarP(&o.SuppressOutput, "quiet", "q", false, "Suppress the build output and print image ID on success")
	f.BoolVar(&o.NoCache, "no-cache", false, "Do not use cache when building the image")
	f.BoolVar(&o.PullParent, "pull", false, "Always attempt to pull a newer version of the image")
	f.BoolVar(&o.Remove, "rm", true, "Remove intermediate containers after a successful build")
	f.BoolVar(&o.ForceRemove, "force-rm", false, "Always remove intermediate containers")
	f.StringArrayVar(&buildArgs, "build-arg", nil, "Set build-time variables")
	f.StringArrayVar(&labels, "label", nil, "Set metadata for an image")
	f.StringVar(&o.Target, "target", "", "Set the target build stage to build")
	f.StringVar(&o.NetworkMode, "network", "default", "Set the networking mode for the RUN instructions during build")
	f.StringVar(&o.Platform, "platform", "", "Set platform if server is multi-platform capable")
	f.StringSliceVar(&o.CacheFrom, "cache-from", nil, "Images to consider as cache sources")
	f.StringVar(&iidfile, "iidfile", "", "Write the image ID to the file")
	return cmd
}

// tarContext writes the build context at dir as a tar, less what its
// .dockerignore excludes (the Dockerfile and .dockerignore are always
// sent). Symlinks are sent as links, never followed.
func tarContext(dir, dockerfile string, extra []byte, w io.Writer) error {
	var patterns []string
	if f, err := os.Open(filepath.Join(dir, ".dockerignore")); err == nil {
		patterns, err = ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("error reading .dockerignore: %w", err)
		}
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return err
	}
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	keep := map[string]bool{".dockerignore": true, filepath.Clean(dockerfile): true}
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if !keep[rel] && len(patterns) > 0 {
			if m, _ := pm.MatchesOrParentMatches(rel); m {
				if d.IsDir() && !pm.Exclusions() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil // sockets and the like are not sent
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if extra != nil {
		if err := tw.WriteHeader(&tar.Header{Name: dockerfile, Mode: 0o600, Size: int64(len(extra)), ModTime: time.Now()}); err != nil {
			return err
		}
		if _, err := tw.Write(extra); err != nil {
			return err
		}
	}
	return tw.Close()
}

// NewCommitCommand is "docker commit".
func NewCommitCommand(cli *command.Cli) *cobra.Command {
	var o container.CommitOptions
	cmd := &cobra.Command{
		Use:   "commit [OPTIONS] CONTAINER [REPOSITORY[:TAG]]",
		Short: "Create a new image from a container's changes",
		Args:  command.RequiresRangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				o.Reference = args[1]
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			resp, err := c.ContainerCommit(cmd.Context(), args[0], o)
			if err != nil {
				return err
			}
			fmt.Fprintln(cli.Out(), resp.ID)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Author, "author", "a", "", `Author (e.g., "John Hannibal Smith <hannibal@a-team.com>")`)
	f.StringVarP(&o.Comment, "message", "m", "", "Commit message")
	f.StringArrayVarP(&o.Changes, "change", "c", nil, "Apply Dockerfile instruction to the created image")
	f.BoolVarP(&o.Pause, "pause", "p", true, "Pause container during commit")
	return cmd
}

// NewHistoryCommand is "docker history".
func NewHistoryCommand(cli *command.Cli) *cobra.Command {
	var human, noTrunc, quiet bool
	cmd := &cobra.Command{
		Use:   "history [OPTIONS] IMAGE",
		Short: "Show the history of an image",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cli.Client()
			if err != nil {
				return err
			}
			h, err := c.ImageHistory(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if quiet {
				for _, e := range h {
					id := e.ID
					if !noTrunc && id != "<missing>" {
						id = stringid.TruncateID(id)
					}
					fmt.Fprintln(cli.Out(), id)
				}
				return nil
			}
			tw := tabwriter.NewWriter(cli.Out(), 10, 1, 3, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tCREATED\tCREATED BY\tSIZE\tCOMMENT")
			for _, e := range h {
				id, by := e.ID, strings.ReplaceAll(e.CreatedBy, "\t", " ")
				created := time.Unix(e.Created, 0).Format(time.RFC3339)
				size := fmt.Sprint(e.Size)
				if human {
					created = units.HumanDuration(time.Since(time.Unix(e.Created, 0))) + " ago"
					size = units.HumanSizeWithPrecision(float64(e.Size), 3)
				}
				if !noTrunc {
					if id != "<missing>" {
						id = stringid.TruncateID(id)
					}
					if len(by) > 45 {
						by = by[:44] + "…"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, created, by, size, e.Comment)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&human, "human", "H", true, "Print sizes and dates in human readable format")
	f.BoolVar(&noTrunc, "no-trunc", false, "Don't truncate output")
	f.BoolVarP(&quiet, "quiet", "q", false, "Only show image IDs")
	return cmd
}
