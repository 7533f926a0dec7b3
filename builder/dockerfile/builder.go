package dockerfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/distribution/reference"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Build is one build, prepared: the context unpacked and the Dockerfile
// parsed. Errors found while preparing are the request's (an HTTP
// error); errors while running are streamed.
type Build struct {
	backend    Backend
	opts       Options
	contextDir string
	dockerfile string
	stages     []instructions.Stage
	metaArgs   []instructions.ArgCommand
	escape     rune
	tags       []string // familiar form

	out        *output
	stageImage map[string]*stageResult // by lower-case name and by index
	usedArgs   map[string]bool
	totalSteps int
	step       int
	// noCommit: dispatch only changes the config (commit -c).
	noCommit bool
}

type stageResult struct {
	imageID string
	config  *Config
}

// Prepare unpacks the context into a directory under tmpDir and parses
// the Dockerfile. The caller must Close the build.
func Prepare(ctx context.Context, backend Backend, opts Options, contextTar io.Reader, tmpDir string) (*Build, error) {
	b := &Build{backend: backend, opts: opts, stageImage: map[string]*stageResult{}, usedArgs: map[string]bool{}}
	for _, t := range opts.Tags {
		named, err := reference.ParseNormalizedNamed(t)
		if err != nil {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %w", err))
		}
		if _, ok := named.(reference.Digested); ok {
			return nil, errdefs.InvalidParameter(fmt.Errorf("invalid tag %q: a build cannot be tagged by digest", t))
		}
		b.tags = append(b.tags, reference.FamiliarString(reference.TagNameOnly(named)))
	}
	switch opts.NetworkMode {
	case "", "default", "bridge", "none", "host":
	default:
		return nil, errdefs.InvalidParameter(fmt.Errorf("network mode %q is not supported for builds: use default, none or host", opts.NetworkMode))
	}
	dir, err := os.MkdirTemp(tmpDir, "build-")
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	b.contextDir = dir
	if err := extractContext(contextTar, dir); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.parse(); err != nil {
		b.Close()
		return nil, err
	}
	if err := applyDockerignore(dir, b.dockerfile); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close removes the unpacked context.
func (b *Build) Close() {
	if b.contextDir != "" {
		os.RemoveAll(b.contextDir)
	}
}

func (b *Build) parse() error {
	name := b.opts.Dockerfile
	if name == "" {
		name = "Dockerfile"
	}
	p, err := securejoin.SecureJoin(b.contextDir, name)
	if err != nil {
		return errdefs.InvalidParameter(err)
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) && b.opts.Dockerfile == "" {
		// Docker falls back to the lower-case name.
		name = "dockerfile"
		p = filepath.Join(b.contextDir, name)
		data, err = os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			name = "Dockerfile"
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errdefs.InvalidParameter(fmt.Errorf("Cannot locate specified Dockerfile: %s", name))
		}
		return errdefs.InvalidParameter(fmt.Errorf("read Dockerfile: %w", err))
	}
	b.dockerfile, _ = filepath.Rel(b.contextDir, p)
	if len(data) == 0 {
		return errdefs.InvalidParameter(fmt.Errorf("the Dockerfile (%s) cannot be empty", name))
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return errdefs.InvalidParameter(err)
	}
	b.escape = res.EscapeToken
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return errdefs.InvalidParameter(err)
	}
	if len(stages) == 0 {
		return errdefs.InvalidParameter(fmt.Errorf("file with no instructions"))
	}
	if b.opts.Target != "" {
		i, ok := instructions.HasStage(stages, b.opts.Target)
		if !ok {
			return errdefs.InvalidParameter(fmt.Errorf("failed to reach build target %s in Dockerfile", b.opts.Target))
		}
		stages = stages[:i+1]
	}
	if len(b.opts.Labels) > 0 {
		// --label is a LABEL step at the end of the target stage.
		keys := make([]string, 0, len(b.opts.Labels))
		for k := range b.opts.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		last := &stages[len(stages)-1]
		for _, k := range keys {
			last.AddCommand(instructions.NewLabelCommand(k, b.opts.Labels[k], true))
		}
	}
	b.stages, b.metaArgs = stages, metaArgs
	b.totalSteps = len(metaArgs)
	for _, s := range stages {
		b.totalSteps += 1 + len(s.Commands)
	}
	return nil
}

// Run builds, streaming Docker's JSON messages to w, and returns the
// final image ID. A failure is both streamed (errorDetail) and returned.
func (b *Build) Run(ctx context.Context, w io.Writer) (string, error) {
	b.out = newOutput(w, b.opts.Quiet)
	id, err := b.run(ctx)
	if err != nil {
		b.out.fail(err)
		return "", err
	}
	b.out.finish(id)
	return id, nil
}

func (b *Build) run(ctx context.Context) (string, error) {
	meta := map[string]*string{}
	var metaOrder []string
	for _, a := range b.metaArgs {
		b.stepf("%s", a.String())
		for _, kv := range a.Args {
			v := kv.Value
			if given, ok := b.opts.BuildArgs[kv.Key]; ok && given != nil {
				v = given
			}
			if v != nil {
				expanded, err := b.expandWith(*v, metaEnv(meta, metaOrder))
				if err != nil {
					return "", err
				}
				v = &expanded
			}
			if _, seen := meta[kv.Key]; !seen {
				metaOrder = append(metaOrder, kv.Key)
			}
			meta[kv.Key] = v
			b.usedArgs[kv.Key] = true
		}
	}
	var last *stageResult
	for i := range b.stages {
		st, err := b.buildStage(ctx, &b.stages[i], meta, metaOrder)
		if err != nil {
			return "", err
		}
		res := &stageResult{imageID: st.imageID, config: st.config}
		b.stageImage[fmt.Sprint(i)] = res
		if b.stages[i].Name != "" {
			b.stageImage[strings.ToLower(b.stages[i].Name)] = res
		}
		if st.imageID == "" {
			return "", errdefs.InvalidParameter(fmt.Errorf("No image was generated. Is your Dockerfile empty?"))
		}
		b.out.aux(st.imageID)
		last = res
	}
	var unused []string
	for k := range b.opts.BuildArgs {
		if !b.usedArgs[k] && !builtinArgs[k] {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		sort.Strings(unused)
		b.out.streamf("[Warning] One or more build-args %v were not consumed\n", unused)
	}
	b.out.streamf("Successfully built %s\n", shortID(last.imageID))
	for _, t := range b.tags {
		if err := b.backend.TagImage(ctx, last.imageID, t); err != nil {
			return "", err
		}
		b.out.streamf("Successfully tagged %s\n", t)
	}
	return last.imageID, nil
}

func (b *Build) stepf(format string, args ...any) {
	b.step++
	b.out.streamf("Step %d/%d : %s\n", b.step, b.totalSteps, fmt.Sprintf(format, args...))
}

func metaEnv(meta map[string]*string, order []string) []string {
	var env []string
	for _, k := range order {
		if v := meta[k]; v != nil {
			env = append(env, k+"="+*v)
		}
	}
	return env
}

func (b *Build) expandWith(word string, env []string) (string, error) {
	lex := shell.NewLex(b.escape)
	s, _, err := lex.ProcessWord(word, shell.EnvsFromSlice(env))
	return s, err
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// builtinArgs may be given with --build-arg without an ARG: the proxy
// settings, passed to RUN but kept out of the image's history.
var builtinArgs = map[string]bool{
	"HTTP_PROXY": true, "http_proxy": true, "HTTPS_PROXY": true, "https_proxy": true,
	"FTP_PROXY": true, "ftp_proxy": true, "NO_PROXY": true, "no_proxy": true,
	"ALL_PROXY": true, "all_proxy": true,
}

// output writes the build's JSON messages. Quiet builds keep the
// stream in a buffer, shown only if the build fails.
type output struct {
	mu    sync.Mutex
	w     io.Writer
	enc   *json.Encoder
	quiet bool
	buf   bytes.Buffer
}

func newOutput(w io.Writer, quiet bool) *output {
	return &output{w: w, enc: json.NewEncoder(w), quiet: quiet}
}

func (o *output) streamf(format string, args ...any) {
	o.stream(fmt.Sprintf(format, args...))
}

func (o *output) stream(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.quiet {
		o.buf.WriteString(s)
		return
	}
	if err := o.enc.Encode(jsonmessage.JSONMessage{Stream: s}); err != nil {
		slog.Debug("build output", "err", err)
	}
	flush(o.w)
}

// Write lets a RUN step's output go straight to the stream.
func (o *output) Write(p []byte) (int, error) {
	o.stream(string(p))
	return len(p), nil
}

// rawWriter passes complete JSON messages (a pull's progress) into the
// stream as they are; a quiet build drops them, as Docker's does.
type rawWriter struct{ o *output }

func (r rawWriter) Write(p []byte) (int, error) {
	r.o.mu.Lock()
	defer r.o.mu.Unlock()
	if r.o.quiet {
		return len(p), nil
	}
	n, err := r.o.w.Write(p)
	flush(r.o.w)
	return n, err
}

func (o *output) aux(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	raw := json.RawMessage(fmt.Sprintf(`{"ID":%q}`, id))
	o.enc.Encode(jsonmessage.JSONMessage{Aux: &raw})
	flush(o.w)
}

func (o *output) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.quiet && o.buf.Len() > 0 {
		o.enc.Encode(jsonmessage.JSONMessage{Stream: o.buf.String()})
	}
	msg := err.Error()
	je := &jsonmessage.JSONError{Message: msg}
	var re *runError
	if errors.As(err, &re) {
		je.Code = re.code
	}
	// "error" too: docker-py and compose 1.29 read that key.
	//lint:ignore SA1019 older clients still read the top-level "error"
	o.enc.Encode(jsonmessage.JSONMessage{Error: je, ErrorMessage: msg})
	flush(o.w)
}

func (o *output) finish(id string) {
	if o.quiet {
		o.mu.Lock()
		o.enc.Encode(jsonmessage.JSONMessage{Stream: id + "\n"})
		o.mu.Unlock()
		flush(o.w)
	}
}

func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// runError is a RUN step that exited non-zero; its code becomes the
// errorDetail's code, which the CLI exits with.
type runError struct {
	cmd  string
	code int
}

func (e *runError) Error() string {
	return fmt.Sprintf("The command '%s' returned a non-zero code: %d", e.cmd, e.code)
}

// hostPlatform is the OS and architecture images built from scratch get.
func hostPlatform() (string, string) { return "linux", runtime.GOARCH }
