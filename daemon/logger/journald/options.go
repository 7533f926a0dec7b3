// Package journald is the journald log driver: each line a container prints
// becomes a journal entry sent over journald's native protocol, and
// `docker logs` reads them back through journalctl.
package journald

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/sdengine/engine/pkg/errdefs"
)

// Container is what the driver needs to know of the container it logs for.
type Container struct {
	ID        string // full 64-char ID
	Name      string // without the leading "/"
	ImageName string
	ImageID   string // "sha256:..." or bare hex
	Labels    map[string]string
	Env       []string // KEY=VALUE
}

// config is the parsed form of the --log-opt options.
type config struct {
	tag         *template.Template
	labels      []string
	labelsRegex *regexp.Regexp
	env         []string
	envRegex    *regexp.Regexp
}

// defaultTag is Docker's default: the short container ID.
const defaultTag = "{{.ID}}"

func parseOptions(opts map[string]string) (config, error) {
	var cfg config
	tag := defaultTag
	for k, v := range opts {
		var err error
		switch k {
		case "tag":
			if v != "" {
				tag = v
			}
		case "labels":
			cfg.labels = splitList(v)
		case "env":
			cfg.env = splitList(v)
		case "labels-regex":
			cfg.labelsRegex, err = compileRegex(k, v)
		case "env-regex":
			cfg.envRegex, err = compileRegex(k, v)
		default:
			return cfg, errdefs.InvalidParameter(fmt.Errorf("unknown log opt '%s' for journald log driver", k))
		}
		if err != nil {
			return cfg, err
		}
	}
	t, err := template.New("tag").Option("missingkey=error").Parse(tag)
	if err != nil {
		return cfg, errdefs.InvalidParameter(fmt.Errorf("invalid tag template %q: %w", tag, err))
	}
	cfg.tag = t
	return cfg, nil
}

func compileRegex(opt, v string) (*regexp.Regexp, error) {
	if v == "" {
		return nil, nil
	}
	re, err := regexp.Compile(v)
	if err != nil {
		return nil, errdefs.InvalidParameter(fmt.Errorf("invalid %s %q: %w", opt, v, err))
	}
	return re, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ValidateOptions checks --log-opt values without contacting journald, so
// the API can reject a bad container config at create time.
func ValidateOptions(opts map[string]string) error {
	cfg, err := parseOptions(opts)
	if err != nil {
		return err
	}
	// Executing against a dummy container catches references to fields the
	// template context does not have, which parsing alone does not.
	if _, err := cfg.renderTag(Container{ID: strings.Repeat("0", 64)}); err != nil {
		return err
	}
	return nil
}

// tagContext is what a tag template may reference; the names are Docker's.
type tagContext struct {
	ID, FullID, Name                string
	ImageName, ImageID, ImageFullID string
	DaemonName                      string
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func (cfg config) renderTag(c Container) (string, error) {
	imageFull := strings.TrimPrefix(c.ImageID, "sha256:")
	ctx := tagContext{
		ID: shortID(c.ID), FullID: c.ID, Name: c.Name,
		ImageName: c.ImageName, ImageID: shortID(imageFull), ImageFullID: c.ImageID,
		DaemonName: "docker",
	}
	var b bytes.Buffer
	if err := cfg.tag.Execute(&b, ctx); err != nil {
		return "", errdefs.InvalidParameter(fmt.Errorf("invalid tag template: %w", err))
	}
	return b.String(), nil
}

// extraAttributes is what the labels, labels-regex, env and env-regex
// options select from the container, keyed by label or variable name.
func (cfg config) extraAttributes(c Container) map[string]string {
	out := map[string]string{}
	for _, k := range cfg.labels {
		if v, ok := c.Labels[k]; ok {
			out[k] = v
		}
	}
	if cfg.labelsRegex != nil {
		for k, v := range c.Labels {
			if cfg.labelsRegex.MatchString(k) {
				out[k] = v
			}
		}
	}
	if len(cfg.env) == 0 && cfg.envRegex == nil {
		return out
	}
	env := map[string]string{}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v // later definitions win, as in the process's environment
	}
	for _, k := range cfg.env {
		if v, ok := env[k]; ok {
			out[k] = v
		}
	}
	if cfg.envRegex != nil {
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if cfg.envRegex.MatchString(k) {
				out[k] = env[k]
			}
		}
	}
	return out
}

// fieldName turns a label or variable name into a valid journal field name:
// journald silently drops fields whose names are not 1-64 chars of A-Z, 0-9
// and '_' starting with a letter (a leading '_' marks trusted fields), so
// lower case is upper-cased, anything else becomes '_', and leading
// underscores and digits are dropped. "" means there is nothing usable.
func fieldName(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			c = '_'
		}
		if len(b) == 0 && (c == '_' || (c >= '0' && c <= '9')) {
			continue
		}
		b = append(b, c)
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
