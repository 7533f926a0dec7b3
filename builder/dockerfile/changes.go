package dockerfile

import (
	"context"
	"fmt"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"

	"github.com/sdengine/engine/pkg/errdefs"
)

// commitChanges are the instructions `docker commit -c` and `import -c`
// accept, as in Docker.
var commitChanges = map[string]bool{
	"cmd": true, "entrypoint": true, "healthcheck": true, "env": true, "expose": true,
	"label": true, "onbuild": true, "stopsignal": true, "user": true, "volume": true, "workdir": true,
}

// ApplyChanges applies `commit -c` changes (Dockerfile instructions) to
// an image's runtime config, with the same parser and dispatch as a
// build.
func ApplyChanges(cfg *dockerspec.DockerOCIImageConfig, changes []string) error {
	if len(changes) == 0 {
		return nil
	}
	res, err := parser.Parse(strings.NewReader(strings.Join(changes, "\n")))
	if err != nil {
		return errdefs.InvalidParameter(err)
	}
	b := &Build{escape: res.EscapeToken, opts: Options{NoCache: true}, usedArgs: map[string]bool{}}
	st := &stageState{config: &Config{}, args: map[string]*string{}}
	st.config.Config = *cfg
	for _, n := range res.AST.Children {
		name := strings.ToLower(n.Value)
		if !commitChanges[name] {
			return errdefs.InvalidParameter(fmt.Errorf("%s is not a valid change command", strings.ToUpper(n.Value)))
		}
		cmd, err := instructions.ParseCommand(n)
		if err != nil {
			return errdefs.InvalidParameter(err)
		}
		if err := b.applyConfigOnly(st, cmd); err != nil {
			return err
		}
	}
	*cfg = st.config.Config
	return nil
}

// applyConfigOnly dispatches a config instruction without committing.
func (b *Build) applyConfigOnly(st *stageState, cmd instructions.Command) error {
	if w, ok := cmd.(*instructions.WorkdirCommand); ok {
		p := w.Path
		if !strings.HasPrefix(p, "/") {
			base := st.config.Config.WorkingDir
			if base == "" {
				base = "/"
			}
			p = base + "/" + p
		}
		st.config.Config.WorkingDir = cleanPath(p)
		return nil
	}
	b.noCommit = true
	defer func() { b.noCommit = false }()
	return b.dispatch(context.TODO(), st, cmd)
}
