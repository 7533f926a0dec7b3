package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sdengine/engine/cli/command"
	"github.com/spf13/cobra"
)

// newTestCli is a Cli with no daemon behind it: nothing here should reach
// one, and what does fails fast and the same way in both trees.
func newTestCli(out, errOut io.Writer) *command.Cli {
	c := command.NewCli(io.NopCloser(strings.NewReader("")), out, errOut)
	c.Host = "unix:///nonexistent/docker.sock"
	return c
}

// runWith runs args on the tree build makes and returns what it printed
// and its exit status.
func runWith(t *testing.T, build func(*command.Cli, []string) *cobra.Command, args []string) string {
	t.Helper()
	var out, errb bytes.Buffer
	c := newTestCli(&out, &errb)
	defer c.Close()
	code := execute(build(c, args), args, io.NopCloser(strings.NewReader("")), &out, &errb)
	return fmt.Sprintf("stdout:\n%s\nstderr:\n%s\nexit: %d", out.String(), errb.String(), code)
}

func fullTree(c *command.Cli, _ []string) *cobra.Command { return NewRootCommand(c) }

// commandPaths lists every command of the full tree as the words that run
// it, once per alias.
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	var paths [][]string
	var walk func(prefix []string, cmd *cobra.Command)
	walk = func(prefix []string, cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			for _, word := range append([]string{sub.Name()}, sub.Aliases...) {
				p := append(slices.Clone(prefix), word)
				paths = append(paths, p)
				walk(p, sub)
			}
		}
	}
	walk(nil, NewRootCommand(newTestCli(io.Discard, io.Discard)))
	if len(paths) < 50 {
		t.Fatalf("only %d commands in the tree", len(paths))
	}
	return paths
}

// TestLazyTreeSameOutput runs every command's --help, and a bad flag, on
// the tree built for the arguments and on the whole tree: the output and
// exit status must be the same.
func TestLazyTreeSameOutput(t *testing.T) {
	var cases [][]string
	for _, p := range commandPaths(t) {
		cases = append(cases,
			append(slices.Clone(p), "--help"),
			append(slices.Clone(p), "-h"),
			append(slices.Clone(p), "--no-such-flag"),
			append([]string{"-D", "-H", "unix:///x.sock", "--log-level=info"}, append(slices.Clone(p), "--help")...),
		)
	}
	cases = append(cases,
		nil, []string{"--help"}, []string{"-h"}, []string{"help"}, []string{"help", "exec"},
		[]string{"help", "container", "ls"}, []string{"nosuch"}, []string{"container", "nosuch"},
		[]string{"container"}, []string{"container", "--help", "ls"}, []string{"-v"}, []string{"--version"},
		[]string{"--no-such-flag", "ps"}, []string{"-Dv", "ps", "--help"}, []string{"--", "ps", "--help"},
		[]string{"-H"}, []string{"--tls=false", "ps", "--help"}, []string{"-l", "bogus", "ps", "--no-such-flag"},
		[]string{"-D", "-v"}, []string{"-v", "--tls=maybe"}, []string{"-l", "bogus", "--version"}, []string{"--version=false"},
		[]string{"-v", "-H"}, []string{"-H", "-v"}, []string{"--version", "ps", "--help"},
		[]string{"exec"}, []string{"container", "exec", "onlyone"}, []string{"ls", "--help"}, []string{"remove"},
	)
	for _, args := range cases {
		lazy := runWith(t, newRootCommandFor, args)
		full := runWith(t, fullTree, args)
		if lazy != full {
			t.Errorf("docker %s:\n--- lazily built tree:\n%s\n--- whole tree:\n%s", strings.Join(args, " "), lazy, full)
		}
	}
}

// TestLazyTreeBuildsOneCommand checks the tree is indeed lazy where it
// should be, and whole where it must be.
func TestLazyTreeBuildsOneCommand(t *testing.T) {
	c := newTestCli(io.Discard, io.Discard)
	for _, tc := range []struct {
		args []string
		want []string // the commands under the root; nil: all of them
	}{
		{[]string{"exec", "cc", "true"}, []string{"exec"}},
		{[]string{"-H", "unix:///x.sock", "--tlsverify", "-D", "run", "--rm", "img"}, []string{"run"}},
		{[]string{"--host=unix:///x.sock", "-Hunix:///y", "-l", "debug", "--config", "x", "-c", "x", "ps"}, []string{"ps"}},
		{[]string{"container", "ls", "-a"}, []string{"container"}},
		{[]string{"image", "rmi", "x"}, []string{"image"}},
		{nil, nil},
		{[]string{"--help", "ps"}, nil},
		{[]string{"help", "ps"}, nil},
		{[]string{cobra.ShellCompRequestCmd, "ps", ""}, nil},
		{[]string{"container"}, nil},
		{[]string{"container", "nosuch"}, nil},
		{[]string{"ls"}, nil},
		{[]string{"-D"}, nil},
		{[]string{"--version"}, []string{}},
		{[]string{"-H", "unix:///x.sock", "-v"}, []string{}},
		{[]string{"-H", "-v"}, nil},
		{[]string{"--version=false"}, nil},
		{[]string{"-Dv", "ps"}, nil},
		{[]string{"--", "ps"}, nil},
		{[]string{"-H"}, nil},
	} {
		root := newRootCommandFor(c, tc.args)
		var got []string
		for _, sub := range root.Commands() {
			got = append(got, sub.Name())
		}
		switch {
		case tc.want == nil:
			if len(got) < len(topLevel)+len(groups) {
				t.Errorf("%q: want the whole tree, got %v", tc.args, got)
			}
		case !slices.Equal(got, tc.want):
			t.Errorf("%q: want %v, got %v", tc.args, tc.want, got)
		case len(got) == 1 && root.Commands()[0].HasSubCommands() && len(root.Commands()[0].Commands()) != 1:
			t.Errorf("%q: the group has %d commands, want 1", tc.args, len(root.Commands()[0].Commands()))
		}
	}
}

// TestCommandTables checks each table entry's words are the name and
// aliases of the command it builds, and that no word is taken twice.
func TestCommandTables(t *testing.T) {
	c := newTestCli(io.Discard, io.Discard)
	check := func(where string, table []command.Entry, build func(command.Entry) *cobra.Command) map[string]bool {
		seen := map[string]bool{}
		for _, e := range table {
			cmd := build(e)
			if want := append([]string{cmd.Name()}, cmd.Aliases...); !slices.Equal(e.Names, want) {
				t.Errorf("%s: entry %v builds %v", where, e.Names, want)
			}
			for _, w := range e.Names {
				if seen[w] {
					t.Errorf("%s: %q twice", where, w)
				}
				seen[w] = true
			}
		}
		return seen
	}
	top := check("docker", topLevel, func(e command.Entry) *cobra.Command { return newTopLevel(c, e) })
	for _, g := range groups {
		if top[g.name] {
			t.Errorf("%q is both a command and a group", g.name)
		}
		check("docker "+g.name, g.commands, func(e command.Entry) *cobra.Command { return e.New(c) })
	}
}
