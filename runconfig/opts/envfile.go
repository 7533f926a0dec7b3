package opts

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sdengine/engine/pkg/errdefs"
)

// utf8BOM is stripped from the first line: editors on some platforms add it
// and docker ignores it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ParseEnvFile reads a docker env-file: one VAR=VALUE per line, lines that are
// empty or start with '#' (after leading whitespace) are ignored, the value is
// taken verbatim (no quotes or trimming), and a bare VAR is taken from this
// process's environment, or dropped when unset there.
func ParseEnvFile(filename string) ([]string, error) {
	return parseKeyValueFile(filename, os.LookupEnv)
}

// ParseLabelFile reads a label file with the env-file syntax; a bare KEY has
// no environment fallback and is dropped, as docker does.
func ParseLabelFile(filename string) ([]string, error) {
	return parseKeyValueFile(filename, nil)
}

// parseKeyValueFile implements the shared line grammar. lookup resolves a
// bare key; nil means bare keys are dropped.
func parseKeyValueFile(filename string, lookup func(string) (string, bool)) ([]string, error) {
	data, err := os.ReadFile(filename)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filename, err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		raw := sc.Bytes()
		if lineNo == 1 {
			raw = bytes.TrimPrefix(raw, utf8BOM)
		}
		if !utf8.Valid(raw) {
			return nil, errdefs.InvalidParameter(fmt.Errorf("env file %s contains invalid utf8 bytes at line %d", filename, lineNo))
		}
		line := strings.TrimLeftFunc(string(raw), unicode.IsSpace)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, hasValue := strings.Cut(line, "=")
		if key == "" {
			return nil, errdefs.InvalidParameter(fmt.Errorf("no variable name on line '%s'", line))
		}
		if strings.IndexFunc(key, unicode.IsSpace) >= 0 {
			return nil, errdefs.InvalidParameter(fmt.Errorf("variable '%s' contains whitespaces", key))
		}
		if hasValue {
			out = append(out, key+"="+value)
			continue
		}
		if lookup != nil {
			if v, ok := lookup(key); ok {
				out = append(out, key+"="+v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", filename, err)
	}
	return out, nil
}

// ValidateEnv normalises one -e value: KEY=VALUE is kept, a bare KEY takes
// its value from this process's environment and is otherwise passed on bare
// (the daemon then leaves the variable unset).
func ValidateEnv(val string) (string, error) {
	key, _, hasValue := strings.Cut(val, "=")
	if key == "" {
		return "", errdefs.InvalidParameter(fmt.Errorf("invalid environment variable: %s", val))
	}
	if hasValue {
		return val, nil
	}
	if v, ok := os.LookupEnv(key); ok {
		return key + "=" + v, nil
	}
	return val, nil
}

// BuildEnv merges env files (in order) and then -e values, so that values on
// the command line override the files, matching docker's ordering.
func BuildEnv(envFiles, envs []string) ([]string, error) {
	var out []string
	for _, f := range envFiles {
		vars, err := ParseEnvFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, vars...)
	}
	for _, e := range envs {
		v, err := ValidateEnv(e)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
