package container

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sdengine/engine/cli/command"
)

// maxParallel bounds how many requests a batch command has in flight, as
// Docker's CLI does (50): enough to overlap every stop's grace period in
// the common case, few enough not to open hundreds of connections at once.
const maxParallel = 50

// forEach runs op on every named container concurrently and prints each
// name on success; it is the body of start, stop, restart, kill, rm,
// pause, unpause and update. See forEachOutput.
func forEach(cli *command.Cli, names []string, op func(ctx context.Context, name string) error, ctx context.Context) error {
	return forEachOutput(ctx, cli, names, func(ctx context.Context, name string) (string, error) {
		return name, op(ctx, name)
	})
}

// forEachOutput runs op on every named container, at most maxParallel at a
// time, and behaves as Docker's CLI does for its batch commands: each
// result line is printed as soon as it and all those before it are done,
// in the order of the arguments (so the output does not depend on timing),
// the errors follow on stderr, and the status is 1 if any failed.
func forEachOutput(ctx context.Context, cli *command.Cli, names []string, op func(ctx context.Context, name string) (string, error)) error {
	errs := runOrdered(ctx, names, maxParallel, op, func(out string) {
		fmt.Fprintln(cli.Out(), out)
	})
	return reportErrors(cli.Err(), errs)
}

// notFailure marks an error a batch command reports without failing, as
// `docker rm -f` does for a container that does not exist.
type notFailure struct{ error }

func (e notFailure) Unwrap() error { return e.error }

// reportErrors prints errs on w, one a line, and turns them into the
// batch commands' exit status: 1 if any is a failure.
func reportErrors(w io.Writer, errs []error) error {
	failed := false
	for _, err := range errs {
		fmt.Fprintln(w, err)
		var nf notFailure
		if !errors.As(err, &nf) {
			failed = true
		}
	}
	if failed {
		return command.StatusError{StatusCode: 1}
	}
	return nil
}

// runOrdered calls op for every name with at most limit calls running,
// hands each successful output to emit in the order of names (emit runs on
// the caller's goroutine only) and returns the errors in that order too.
func runOrdered(ctx context.Context, names []string, limit int, op func(ctx context.Context, name string) (string, error), emit func(string)) []error {
	type result struct {
		out string
		err error
	}
	results := make([]chan result, len(names))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	sem := make(chan struct{}, limit)
	go func() {
		for i, n := range names {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				out, err := op(ctx, n)
				results[i] <- result{out, err}
			}()
		}
	}()
	var errs []error
	for _, ch := range results {
		r := <-ch
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		emit(r.out)
	}
	return errs
}
