package command

import (
	"slices"

	"github.com/spf13/cobra"
)

// Entry is one command of a table of commands: the words that select it on
// the command line (its name, then its aliases) and its constructor. Tables
// let the CLI build only the command that runs: building every command and
// its flags is most of what the CLI does before its first request.
type Entry struct {
	Names []string
	New   func(*Cli) *cobra.Command
}

// Build builds every command of table.
func Build(cli *Cli, table []Entry) []*cobra.Command {
	cmds := make([]*cobra.Command, len(table))
	for i, e := range table {
		cmds[i] = e.New(cli)
	}
	return cmds
}

// Lookup returns the entry of table that word selects.
func Lookup(table []Entry, word string) (Entry, bool) {
	for _, e := range table {
		if slices.Contains(e.Names, word) {
			return e, true
		}
	}
	return Entry{}, false
}

// TopLevel is table under each command's first name only, without the
// commands named in except: a group's commands as docker also offers them
// at the top level ("docker ps", but no "docker ls").
func TopLevel(table []Entry, except ...string) []Entry {
	var out []Entry
	for _, e := range table {
		if !slices.Contains(except, e.Names[0]) {
			out = append(out, Entry{Names: e.Names[:1], New: e.New})
		}
	}
	return out
}
