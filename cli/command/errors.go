package command

import (
	"fmt"

	"github.com/spf13/cobra"
)

// StatusError carries the exit status a command wants. Status is printed to
// stderr when non-empty; StatusCode becomes the process exit code.
type StatusError struct {
	Status     string
	StatusCode int
}

func (e StatusError) Error() string {
	return fmt.Sprintf("Status: %s, Code: %d", e.Status, e.StatusCode)
}

// UsageError is the exit status of bad flags (docker's 125).
const UsageError = 125

// NoArgs and the other validators check positional arguments with docker's
// wording; like docker, a wrong argument count exits 1.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return usageErrorf(cmd, "%q accepts no arguments.", cmd.CommandPath())
}

// RequiresMinArgs demands at least n arguments.
func RequiresMinArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= n {
			return nil
		}
		return usageErrorf(cmd, "'%s' requires at least %d %s", cmd.CommandPath(), n, plural("argument", n))
	}
}

// RequiresMaxArgs allows at most n arguments.
func RequiresMaxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) <= n {
			return nil
		}
		return usageErrorf(cmd, "'%s' requires at most %d %s", cmd.CommandPath(), n, plural("argument", n))
	}
}

// ExactArgs demands exactly n arguments.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		return usageErrorf(cmd, "'%s' requires exactly %d %s", cmd.CommandPath(), n, plural("argument", n))
	}
}

// RequiresRangeArgs demands between lo and hi arguments.
func RequiresRangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && len(args) <= hi {
			return nil
		}
		return usageErrorf(cmd, "'%s' requires at least %d and at most %d %s", cmd.CommandPath(), lo, hi, plural("argument", hi))
	}
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func usageErrorf(cmd *cobra.Command, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	return StatusError{
		Status:     fmt.Sprintf("docker: %s\n\nUsage:  %s\n\nSee '%s --help' for more information", msg, cmd.UseLine(), cmd.CommandPath()),
		StatusCode: 1,
	}
}

// FlagErrorFunc turns pflag errors into docker's usage error (exit 125).
func FlagErrorFunc(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	return StatusError{
		Status:     fmt.Sprintf("%s\n\nUsage:  %s\n\nRun '%s --help' for more information", err, cmd.UseLine(), cmd.CommandPath()),
		StatusCode: UsageError,
	}
}

// RunFailure is how run/create report errors before the container runs:
// "docker: <error>", a hint, and exit status 125.
func RunFailure(cmd *cobra.Command, err error) error {
	return StatusError{
		Status:     fmt.Sprintf("docker: %s\n\nRun '%s --help' for more information", err, cmd.CommandPath()),
		StatusCode: UsageError,
	}
}
