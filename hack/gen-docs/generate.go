package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/sdengine/engine/cli"
	"github.com/sdengine/engine/cli/command"
	daemoncommand "github.com/sdengine/engine/daemon/command"
)

type options struct {
	manDir, mdDir, completionDir, srcDir string
}

// trees builds fresh command trees on every call: cobra's generators add
// help commands and flags to what they walk, and one generator's additions
// must not show up in the next one's output.
func trees() (docker, dockerd *cobra.Command) {
	docker = cli.NewRootCommand(command.NewCli(os.Stdin, io.Discard, io.Discard))
	dockerd = daemoncommand.New()
	for _, c := range []*cobra.Command{docker, dockerd} {
		// No generation date in the output: the reference is committed
		// and must not change when nothing else did.
		c.DisableAutoGenTag = true
	}
	// docker's tree already prints usage lines as docker does; dockerd's
	// says [OPTIONS] itself, without cobra's "[flags]".
	dockerd.DisableFlagsInUseLine = true
	homeAsTilde(docker)
	homeAsTilde(dockerd)
	return docker, dockerd
}

// homeAsTilde writes defaults under the home directory of whoever runs
// the generator (the TLS files, ~/.docker/ca.pem) as ~, as Docker's
// reference does, so the committed reference does not depend on it.
func homeAsTilde(c *cobra.Command) {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return
	}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if rest, ok := strings.CutPrefix(f.DefValue, home+"/"); ok {
			f.DefValue = "~/" + rest
		}
	})
	for _, sub := range c.Commands() {
		homeAsTilde(sub)
	}
}

func generate(o options) error {
	if o.manDir != "" {
		if err := genMan(o); err != nil {
			return fmt.Errorf("man pages: %w", err)
		}
	}
	if o.mdDir != "" {
		if err := genMarkdown(o); err != nil {
			return fmt.Errorf("markdown reference: %w", err)
		}
	}
	if o.completionDir != "" {
		if err := genCompletion(o.completionDir); err != nil {
			return fmt.Errorf("completion: %w", err)
		}
	}
	return nil
}

func genMan(o options) error {
	docker, dockerd := trees()
	if err := attachLongs(docker, o.srcDir, 0); err != nil {
		return err
	}
	if err := attachLongs(dockerd, o.srcDir, 0); err != nil {
		return err
	}
	escapeUsages(docker)
	escapeUsages(dockerd)
	man1, man8 := filepath.Join(o.manDir, "man1"), filepath.Join(o.manDir, "man8")
	for _, d := range []string{man1, man8} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// docker-* are user commands (section 1); the daemon is an
	// administration command (section 8), as distributions ship it. The
	// date is cobra's: SOURCE_DATE_EPOCH when set (rpmbuild sets it for
	// reproducible builds), else today.
	if err := doc.GenManTree(docker, &doc.GenManHeader{
		Title: "DOCKER", Section: "1", Source: "sdengine", Manual: "Docker User Manuals",
	}, man1); err != nil {
		return err
	}
	return doc.GenManTree(dockerd, &doc.GenManHeader{
		Title: "DOCKERD", Section: "8", Source: "sdengine", Manual: "System Administration",
	}, man8)
}

func genMarkdown(o options) error {
	docker, dockerd := trees()
	// The markdown puts the long text under "### Synopsis": demote the
	// man sections below it.
	if err := attachLongs(docker, o.srcDir, 3); err != nil {
		return err
	}
	if err := attachLongs(dockerd, o.srcDir, 3); err != nil {
		return err
	}
	if err := os.MkdirAll(o.mdDir, 0o755); err != nil {
		return err
	}
	if err := doc.GenMarkdownTree(docker, o.mdDir); err != nil {
		return err
	}
	return doc.GenMarkdownTree(dockerd, o.mdDir)
}

// genCompletion writes the scripts where distributions look for them
// (bash-completion: completions/docker, fish: docker.fish, zsh: _docker).
// They all call back into `docker __complete`, so names and --init values
// come from the installed binary at completion time.
func genCompletion(dir string) error {
	docker, _ := trees()
	gens := []struct {
		path string
		gen  func(io.Writer) error
	}{
		{"bash/docker", func(w io.Writer) error { return docker.GenBashCompletionV2(w, true) }},
		{"fish/docker.fish", func(w io.Writer) error { return docker.GenFishCompletion(w, true) }},
		{"zsh/_docker", docker.GenZshCompletion},
	}
	for _, g := range gens {
		var buf bytes.Buffer
		if err := g.gen(&buf); err != nil {
			return fmt.Errorf("%s: %w", g.path, err)
		}
		p := filepath.Join(dir, g.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// attachLongs sets each command's Long from srcDir, when a page exists for
// it: "docker container run" reads docker-container-run.md, else
// docker-run.md (the same command under its short name). Markdown headings
// are deepened by demote levels.
func attachLongs(root *cobra.Command, srcDir string, demote int) error {
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		text, err := longFor(c, srcDir)
		if err != nil {
			return err
		}
		if text != "" {
			c.Long = demoteHeadings(text, demote)
		}
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}

func longFor(c *cobra.Command, srcDir string) (string, error) {
	names := []string{strings.ReplaceAll(c.CommandPath(), " ", "-")}
	if p := c.Parent(); p != nil && p.HasParent() {
		names = append(names, c.Root().Name()+"-"+c.Name())
	}
	for _, n := range names {
		text, err := readSource(srcDir, n+".md", 0)
		if os.IsNotExist(err) {
			continue
		}
		return text, err
	}
	return "", nil
}

// readSource reads a page, replacing every "@include FILE" line with that
// file (so run and create share the --init text).
func readSource(dir, name string, depth int) (string, error) {
	if depth > 4 {
		return "", fmt.Errorf("%s: @include nested too deep", name)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), "@include "); ok {
			text, err := readSource(dir, strings.TrimSpace(inc), depth+1)
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			out.WriteString(text + "\n")
			continue
		}
		out.WriteString(line)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

func demoteHeadings(text string, levels int) string {
	if levels == 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	inCode := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(l, "#") {
			lines[i] = strings.Repeat("#", levels) + l
		}
	}
	return strings.Join(lines, "\n")
}

// escapeUsages backslash-escapes "<" in flag usages for the man pages:
// md2man reads them as markdown, where "<name|uid>" is an HTML tag and
// vanishes. (The markdown reference prints usages in a code block.)
func escapeUsages(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		f.Usage = strings.ReplaceAll(f.Usage, "<", `\<`)
	})
	for _, sub := range c.Commands() {
		escapeUsages(sub)
	}
}
