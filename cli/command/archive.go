package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// CheckArchiveOutput refuses, before any work, to write a tar archive to a
// terminal (output "" means stdout), as docker save and export do.
func CheckArchiveOutput(cli *Cli, output string) error {
	if output == "" && cli.Out().IsTerminal() {
		return errors.New("cowardly refusing to save to a terminal. Use the -o flag or redirect")
	}
	return nil
}

// WriteArchive copies an archive stream to stdout (output "") or to the
// file output, through a temporary file in the same directory, so that a
// failed transfer never leaves a truncated archive under that name.
func WriteArchive(cli *Cli, output string, r io.Reader) error {
	if output == "" {
		_, err := io.Copy(cli.Out(), r)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".*")
	if err != nil {
		return fmt.Errorf("failed to save: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to save: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("failed to save: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), output)
}
