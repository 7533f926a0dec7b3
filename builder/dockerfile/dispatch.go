package dockerfile

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	containertypes "github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/signal"
)

// stageState is what a stage has built so far.
type stageState struct {
	imageID string // "" while a scratch stage has no step yet
	config  *Config
	// args declared in this stage, in order, with their values (nil:
	// declared without a value and not given).
	args      map[string]*string
	argOrder  []string
	cmdSet    bool
	hasLayers bool
}

func defaultShell() []string { return []string{"/bin/sh", "-c"} }

func (st *stageState) shell() []string {
	if len(st.config.Config.Shell) > 0 {
		return append([]string(nil), st.config.Config.Shell...)
	}
	return defaultShell()
}

// env is what words are expanded with: the stage's ENV, and its build
// args where ENV does not set the same name.
func (st *stageState) env() []string {
	env := append([]string(nil), st.config.Config.Env...)
	set := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	for _, k := range st.argOrder {
		if v := st.args[k]; v != nil && !set[k] {
			env = append(env, k+"="+*v)
		}
	}
	return env
}

func (b *Build) buildStage(ctx context.Context, s *instructions.Stage, meta map[string]*string, metaOrder []string) (*stageState, error) {
	b.stepf("%s", s.SourceCode)
	st, err := b.from(ctx, s, meta, metaOrder)
	if err != nil {
		return nil, err
	}
	if st.imageID != "" {
		b.out.streamf(" ---> %s\n", shortID(st.imageID))
	}
	if triggers := st.config.Config.OnBuild; len(triggers) > 0 {
		st.config.Config.OnBuild = nil
		plural := "s"
		if len(triggers) == 1 {
			plural = ""
		}
		b.out.streamf("# Executing %d build trigger%s\n", len(triggers), plural)
		for _, t := range triggers {
			cmd, err := parseTrigger(t)
			if err != nil {
				return nil, err
			}
			if err := b.dispatch(ctx, st, cmd); err != nil {
				return nil, err
			}
		}
	}
	for _, cmd := range s.Commands {
		b.stepf("%s", cmd)
		if err := b.dispatch(ctx, st, cmd); err != nil {
			return nil, err
		}
		if st.imageID != "" {
			b.out.streamf(" ---> %s\n", shortID(st.imageID))
		}
	}
	return st, nil
}

func parseTrigger(expr string) (instructions.Command, error) {
	res, err := parser.Parse(strings.NewReader(expr))
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("ONBUILD trigger %q: %w", expr, err))
	}
	if len(res.AST.Children) != 1 {
		return nil, errdefs.InvalidParameter(fmt.Errorf("ONBUILD trigger %q: want one instruction", expr))
	}
	cmd, err := instructions.ParseCommand(res.AST.Children[0])
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("ONBUILD trigger %q: %w", expr, err))
	}
	return cmd, nil
}

// from starts a stage on its base: an earlier stage, scratch, or an image.
func (b *Build) from(ctx context.Context, s *instructions.Stage, meta map[string]*string, metaOrder []string) (*stageState, error) {
	base, err := b.expandWith(s.BaseName, metaEnv(meta, metaOrder))
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("FROM %s: %w", s.BaseName, err))
	}
	if base == "" {
		return nil, errdefs.InvalidParameter(fmt.Errorf("base name (%s) should not be blank", s.BaseName))
	}
	st := &stageState{args: map[string]*string{}}
	if prev, ok := b.stageImage[strings.ToLower(base)]; ok {
		st.imageID, st.config = prev.imageID, copyConfig(prev.config)
		return st, nil
	}
	if base == "scratch" {
		osName, arch := hostPlatform()
		st.config = &Config{}
		st.config.OS, st.config.Architecture = osName, arch
		st.config.RootFS.Type = "layers"
		return st, nil
	}
	img, err := b.baseImage(ctx, base)
	if err != nil {
		return nil, err
	}
	st.imageID, st.config = img.ID, copyConfig(img.Config)
	st.hasLayers = len(img.Config.RootFS.DiffIDs) > 0
	return st, nil
}

// baseImage finds an image named by FROM or --from, pulling it when the
// backend can and it is missing (or --pull asks for it).
func (b *Build) baseImage(ctx context.Context, ref string) (*Image, error) {
	puller, canPull := b.backend.(Puller)
	if b.opts.Pull && canPull {
		if err := puller.PullImage(ctx, ref, b.opts.Platform, rawWriter{b.out}); err != nil {
			return nil, err
		}
	}
	img, err := b.backend.GetImage(ctx, ref)
	if errdefs.IsNotFound(err) && canPull && !b.opts.Pull {
		if err := puller.PullImage(ctx, ref, b.opts.Platform, rawWriter{b.out}); err != nil {
			return nil, err
		}
		img, err = b.backend.GetImage(ctx, ref)
	}
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, errdefs.NotFound(fmt.Errorf("pull access denied for %s, repository does not exist or may require 'docker login': this engine has no image %s and cannot pull it", familiarRepo(ref), ref))
		}
		return nil, err
	}
	return img, nil
}

func familiarRepo(ref string) string {
	if i := strings.LastIndexAny(ref, ":@"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

func copyConfig(c *Config) *Config {
	data, _ := json.Marshal(c)
	out := &Config{}
	json.Unmarshal(data, out)
	return out
}

func (b *Build) dispatch(ctx context.Context, st *stageState, cmd instructions.Command) error {
	if _, isRun := cmd.(*instructions.RunCommand); !isRun {
		if ex, ok := cmd.(instructions.SupportsSingleWordExpansion); ok {
			env := st.env()
			err := ex.Expand(func(word string) (string, error) { return b.expandWith(word, env) })
			if err != nil {
				return errdefs.InvalidParameter(fmt.Errorf("%s: %w", cmd.Name(), err))
			}
		}
	}
	cfg := &st.config.Config
	switch c := cmd.(type) {
	case *instructions.EnvCommand:
		var parts []string
		for _, kv := range c.Env {
			cfg.Env = setEnv(cfg.Env, kv.Key, kv.Value)
			parts = append(parts, kv.Key+"="+kv.Value)
		}
		return b.configStep(ctx, st, "ENV "+strings.Join(parts, " "))
	case *instructions.LabelCommand:
		var parts []string
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		for _, kv := range c.Labels {
			cfg.Labels[kv.Key] = kv.Value
			parts = append(parts, kv.String())
		}
		return b.configStep(ctx, st, "LABEL "+strings.Join(parts, " "))
	case *instructions.MaintainerCommand:
		st.config.Author = c.Maintainer
		return b.configStep(ctx, st, "MAINTAINER "+c.Maintainer)
	case *instructions.ArgCommand:
		var parts []string
		for _, kv := range c.Args {
			v := kv.Value
			if given, ok := b.opts.BuildArgs[kv.Key]; ok && given != nil {
				v = given
			}
			if _, seen := st.args[kv.Key]; !seen {
				st.argOrder = append(st.argOrder, kv.Key)
			}
			st.args[kv.Key] = v
			b.usedArgs[kv.Key] = true
			parts = append(parts, kv.String())
		}
		return b.configStep(ctx, st, "ARG "+strings.Join(parts, " "))
	case *instructions.CmdCommand:
		cfg.Cmd = b.commandLine(st, c.ShellDependantCmdLine)
		st.cmdSet = true
		return b.configStep(ctx, st, fmt.Sprintf("CMD %q", cfg.Cmd))
	case *instructions.EntrypointCommand:
		cfg.Entrypoint = b.commandLine(st, c.ShellDependantCmdLine)
		if !st.cmdSet {
			cfg.Cmd = nil
		}
		return b.configStep(ctx, st, fmt.Sprintf("ENTRYPOINT %q", cfg.Entrypoint))
	case *instructions.UserCommand:
		cfg.User = c.User
		return b.configStep(ctx, st, "USER "+c.User)
	case *instructions.ExposeCommand:
		ports, _, err := nat.ParsePortSpecs(c.Ports)
		if err != nil {
			return errdefs.InvalidParameter(err)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = map[string]struct{}{}
		}
		var names []string
		for p := range ports {
			cfg.ExposedPorts[string(p)] = struct{}{}
			names = append(names, string(p))
		}
		sort.Strings(names)
		return b.configStep(ctx, st, "EXPOSE "+strings.Join(names, " "))
	case *instructions.VolumeCommand:
		if cfg.Volumes == nil {
			cfg.Volumes = map[string]struct{}{}
		}
		for _, v := range c.Volumes {
			v = strings.TrimSpace(v)
			if v == "" {
				return errdefs.InvalidParameter(fmt.Errorf("VOLUME specified can not be an empty string"))
			}
			cfg.Volumes[v] = struct{}{}
		}
		return b.configStep(ctx, st, fmt.Sprintf("VOLUME %v", c.Volumes))
	case *instructions.StopSignalCommand:
		if _, err := signal.Parse(c.Signal); err != nil {
			return errdefs.InvalidParameter(err)
		}
		cfg.StopSignal = c.Signal
		return b.configStep(ctx, st, "STOPSIGNAL "+c.Signal)
	case *instructions.HealthCheckCommand:
		if b.out != nil && c.Health != nil && cfg.Healthcheck != nil && len(cfg.Healthcheck.Test) > 0 && c.Health.Test[0] != "NONE" {
			b.out.streamf("Note: overriding previous HEALTHCHECK: %v\n", cfg.Healthcheck.Test)
		}
		cfg.Healthcheck = c.Health
		return b.configStep(ctx, st, healthcheckCreatedBy(c))
	case *instructions.ShellCommand:
		cfg.Shell = append([]string(nil), c.Shell...)
		return b.configStep(ctx, st, fmt.Sprintf("SHELL %q", cfg.Shell))
	case *instructions.OnbuildCommand:
		cfg.OnBuild = append(cfg.OnBuild, c.Expression)
		return b.configStep(ctx, st, "ONBUILD "+c.Expression)
	case *instructions.WorkdirCommand:
		return b.workdir(ctx, st, c.Path)
	case *instructions.RunCommand:
		return b.runStep(ctx, st, c)
	case *instructions.CopyCommand:
		if len(c.SourceContents) > 0 {
			return errdefs.NotImplemented(fmt.Errorf("COPY with a here-document is not supported by the classic builder"))
		}
		return b.copyStep(ctx, st, copySpec{name: "COPY", srcs: c.SourcePaths, dest: c.DestPath, from: c.From, chown: c.Chown, chmod: c.Chmod})
	case *instructions.AddCommand:
		if len(c.SourceContents) > 0 {
			return errdefs.NotImplemented(fmt.Errorf("ADD with a here-document is not supported by the classic builder"))
		}
		return b.copyStep(ctx, st, copySpec{name: "ADD", srcs: c.SourcePaths, dest: c.DestPath, chown: c.Chown, chmod: c.Chmod, add: true})
	}
	return errdefs.NotImplemented(fmt.Errorf("the %s instruction is not supported by the classic builder", strings.ToUpper(cmd.Name())))
}

// commandLine is CMD's or ENTRYPOINT's argv: the shell form runs under
// the stage's SHELL.
func (b *Build) commandLine(st *stageState, c instructions.ShellDependantCmdLine) []string {
	if c.PrependShell {
		return append(st.shell(), strings.Join(c.CmdLine, " "))
	}
	return append([]string(nil), c.CmdLine...)
}

func setEnv(env []string, key, value string) []string {
	for i, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			env[i] = key + "=" + value
			return env
		}
	}
	return append(env, key+"="+value)
}

// nopCreatedBy is the history line of a step that runs nothing, as the
// classic builder writes it ("/bin/sh -c #(nop)  ENV a=b").
func nopCreatedBy(st *stageState, comment string) string {
	return strings.Join(append(st.shell(), "#(nop) ", comment), " ")
}

// nextConfig is the config of the image a step makes: the stage's config
// (already changed by the step) with the step's history line.
func nextConfig(st *stageState, createdBy string) *Config {
	c := copyConfig(st.config)
	now := time.Now().UTC()
	c.Created = &now
	c.Comment = ""
	c.History = append(c.History, ocispec.History{Created: &now, CreatedBy: createdBy})
	return c
}

// configStep commits a step that changes only the config.
func (b *Build) configStep(ctx context.Context, st *stageState, comment string) error {
	if b.noCommit {
		return nil
	}
	createdBy := nopCreatedBy(st, comment)
	if hit, err := b.probeCache(ctx, st, createdBy); err != nil || hit {
		return err
	}
	cfg := nextConfig(st, createdBy)
	cfg.History[len(cfg.History)-1].EmptyLayer = true
	return b.commit(ctx, st, "", cfg)
}

func (b *Build) commit(ctx context.Context, st *stageState, layer string, cfg *Config) error {
	id, err := b.backend.Commit(ctx, CommitOptions{Parent: st.imageID, Layer: layer, Config: cfg})
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	img, err := b.backend.GetImage(ctx, id)
	if err != nil {
		return err
	}
	st.imageID, st.config = img.ID, copyConfig(img.Config)
	return nil
}

// workdir sets WORKDIR and makes the directory, as root, in a layer
// (empty, and so dropped, when the directory already exists).
func (b *Build) workdir(ctx context.Context, st *stageState, p string) error {
	cfg := &st.config.Config
	if !path.IsAbs(p) {
		base := cfg.WorkingDir
		if base == "" {
			base = "/"
		}
		p = path.Join(base, p)
	}
	cfg.WorkingDir = path.Clean(p)
	createdBy := nopCreatedBy(st, "WORKDIR "+cfg.WorkingDir)
	if hit, err := b.probeCache(ctx, st, createdBy); err != nil || hit {
		return err
	}
	layer, rootfs, err := b.backend.CreateLayer(ctx, st.imageID)
	if err != nil {
		return err
	}
	defer b.removeLayer(layer)
	if err := mkdirInRoot(rootfs, cfg.WorkingDir, 0, 0); err != nil {
		return fmt.Errorf("WORKDIR %s: %w", cfg.WorkingDir, err)
	}
	return b.commit(ctx, st, layer, nextConfig(st, createdBy))
}

func (b *Build) removeLayer(id string) {
	if err := b.backend.RemoveLayer(context.Background(), id); err != nil {
		b.out.streamf("failed to remove build layer %s: %v\n", shortID(id), err)
	}
}

// runArgs are the build args a RUN sees in its environment: the stage's
// declared args with a value (unless ENV sets the same name) and the
// proxy args given on the command line. history lists those that go
// into the step's history line (and cache key): not the proxy args.
func (b *Build) runArgs(st *stageState) (env, history []string) {
	set := map[string]bool{}
	for _, kv := range st.config.Config.Env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	for _, k := range st.argOrder {
		v := st.args[k]
		if v == nil || set[k] {
			continue
		}
		env = append(env, k+"="+*v)
		if !builtinArgs[k] {
			history = append(history, k+"="+*v)
		}
	}
	var proxies []string
	for k, v := range b.opts.BuildArgs {
		if builtinArgs[k] && v != nil && st.args[k] == nil && !set[k] {
			proxies = append(proxies, k+"="+*v)
		}
	}
	sort.Strings(proxies)
	return append(env, proxies...), history
}

// runStep runs RUN in a container of the stage's image and commits it.
func (b *Build) runStep(ctx context.Context, st *stageState, c *instructions.RunCommand) error {
	if len(c.Files) > 0 {
		return errdefs.NotImplemented(fmt.Errorf("RUN with a here-document is not supported by the classic builder"))
	}
	if len(c.FlagsUsed) > 0 {
		return errdefs.NotImplemented(fmt.Errorf("RUN --%s is not supported by the classic builder", c.FlagsUsed[0]))
	}
	var args []string
	if c.PrependShell {
		args = append(st.shell(), strings.Join(c.CmdLine, " "))
	} else {
		args = append([]string(nil), c.CmdLine...)
	}
	argEnv, argHistory := b.runArgs(st)
	histCmd := args
	if len(argHistory) > 0 {
		histCmd = append(append([]string{fmt.Sprintf("|%d", len(argHistory))}, argHistory...), args...)
	}
	createdBy := strings.Join(histCmd, " ")
	if hit, err := b.probeCache(ctx, st, createdBy); err != nil || hit {
		return err
	}
	cfg := st.config.Config
	env := append(append([]string(nil), cfg.Env...), argEnv...)
	ccfg := &containertypes.Config{
		Entrypoint: args,
		Env:        env,
		User:       cfg.User,
		WorkingDir: cfg.WorkingDir,
	}
	if len(ccfg.Env) == 0 {
		ccfg.Env = nil
	}
	id, err := b.backend.CreateContainer(ctx, ContainerOptions{Image: st.imageID, Config: ccfg, NetworkMode: b.opts.NetworkMode})
	if err != nil {
		return err
	}
	b.out.streamf(" ---> Running in %s\n", shortID(id))
	code, err := b.backend.RunContainer(ctx, id, b.out)
	if err == nil && code != 0 {
		err = &runError{cmd: strings.Join(args, " "), code: code}
	}
	if err != nil {
		// A cancelled build (its client gone) leaves nothing to look
		// at: its step's container goes too, as Docker removes it.
		if b.opts.ForceRemove || ctx.Err() != nil {
			b.removeContainer(id)
		}
		return err
	}
	err = b.commit(ctx, st, id, nextConfig(st, createdBy))
	if b.opts.Remove || b.opts.ForceRemove {
		if b.removeContainer(id) {
			b.out.streamf(" ---> Removed intermediate container %s\n", shortID(id))
		}
	}
	return err
}

func (b *Build) removeContainer(id string) bool {
	if err := b.backend.RemoveContainer(context.Background(), id); err != nil {
		b.out.streamf("Error removing intermediate container %s: %v\n", shortID(id), err)
		return false
	}
	return true
}

// probeCache looks for an image built before from the same parent by the
// same step: the same history line (which holds the command, its build
// args, and for COPY/ADD a checksum of the sources) and the same config.
// On a hit the stage moves to that image.
func (b *Build) probeCache(ctx context.Context, st *stageState, createdBy string) (bool, error) {
	if b.opts.NoCache || st.imageID == "" {
		return false, nil
	}
	children, err := b.backend.ImageChildren(ctx, st.imageID)
	if err != nil {
		return false, err
	}
	want, _ := json.Marshal(st.config.Config)
	n := len(st.config.History)
	for _, c := range children {
		h := c.Config.History
		if len(h) != n+1 || h[n].CreatedBy != createdBy {
			continue
		}
		got, _ := json.Marshal(c.Config.Config)
		if string(got) != string(want) {
			continue
		}
		b.out.stream(" ---> Using cache\n")
		st.imageID, st.config = c.ID, copyConfig(c.Config)
		return true, nil
	}
	return false, nil
}

// healthcheckCreatedBy renders HEALTHCHECK as the classic builder's
// history shows it (Go's %q of the struct).
func healthcheckCreatedBy(c *instructions.HealthCheckCommand) string {
	h := c.Health
	if h == nil {
		return "HEALTHCHECK &{[]}"
	}
	return fmt.Sprintf("HEALTHCHECK &{%q %q %q %q %q %q}", h.Test, h.Interval.String(), h.Timeout.String(),
		h.StartPeriod.String(), h.StartInterval.String(), rune(h.Retries))
}

func cleanPath(p string) string { return path.Clean(p) }
