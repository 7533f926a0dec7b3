package command

import (
	"bufio"
	"fmt"
	"strings"
)

// Confirm prints warning and Docker's "Are you sure you want to continue?
// [y/N]" and reports whether the user answered y or yes (the prune
// commands without --force).
func Confirm(cli *Cli, warning string) bool {
	fmt.Fprintf(cli.Out(), "%s\nAre you sure you want to continue? [y/N] ", warning)
	line, _ := bufio.NewReader(cli.In()).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}
