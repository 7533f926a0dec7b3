package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sdengine/engine/cli/formatter"
)

// RawGetter returns the raw inspect JSON of one reference.
type RawGetter func(ref string) ([]byte, error)

// Inspect prints the objects named by refs the way "docker inspect" does:
// an indented JSON array, or with format one template result per object.
// Raw JSON is used, not the Go types, so fields this engine adds (such as
// Config.Init) are shown and usable in templates. Objects that fail are
// reported on stderr after the found ones are printed, and make the
// command exit 1.
func Inspect(out, errOut io.Writer, refs []string, format string, get RawGetter) error {
	var found []json.RawMessage
	var errs []error
	for _, ref := range refs {
		raw, err := get(ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found = append(found, json.RawMessage(raw))
	}
	if format == "" {
		if found == nil {
			found = []json.RawMessage{}
		}
		b, err := json.MarshalIndent(found, "", "    ")
		if err != nil {
			return fmt.Errorf("rendering inspect output: %w", err)
		}
		fmt.Fprintln(out, string(b))
	} else {
		for _, raw := range found {
			var v any
			dec := json.NewDecoder(bytes.NewReader(raw))
			// Numbers stay as written (no 1e+06 for sizes).
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return fmt.Errorf("decoding inspect data: %w", err)
			}
			if err := formatter.Execute(out, format, v); err != nil {
				return err
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	for _, err := range errs {
		fmt.Fprintln(errOut, err)
	}
	return StatusError{StatusCode: 1}
}
