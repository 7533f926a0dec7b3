package jsonfilelog

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeFast reads an entry in exactly the shape appendEntry writes,
// {"log":"...","stream":"...","time":"..."}, several times faster than
// encoding/json. Anything else (another writer's key order, odd escapes)
// reports ok=false and is left to encoding/json.
func decodeFast(line []byte, e *entry) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"log":"`))
	if !ok {
		return false
	}
	log, rest, ok := cutJSONString(rest)
	if !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"stream":"`)); !ok {
		return false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return false
	}
	stream := rest[:i]
	if rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`,"time":"`)); !ok {
		return false
	}
	j := bytes.IndexByte(rest, '"')
	if j < 0 || !bytes.Equal(bytes.TrimRight(rest[j+1:], " \r\n"), []byte("}")) {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	if err != nil {
		return false
	}
	e.Log, e.Stream, e.Time = string(log), string(stream), t
	return true
}

// cutJSONString decodes the JSON string body at the start of b (after the
// opening quote) and returns it with what follows the closing quote.
func cutJSONString(b []byte) (s, rest []byte, ok bool) {
	end := bytes.IndexAny(b, `"\`)
	if end < 0 {
		return nil, nil, false
	}
	if b[end] == '"' {
		return b[:end], b[end+1:], true // no escapes: the common case
	}
	out := make([]byte, 0, len(b))
	out = append(out, b[:end]...)
	for i := end; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return out, b[i+1:], true
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			return nil, nil, false
		}
		switch b[i+1] {
		case '"', '\\', '/':
			out = append(out, b[i+1])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, n, ok := decodeU(b[i:])
			if !ok {
				return nil, nil, false
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default:
			return nil, nil, false
		}
		i += 2
	}
	return nil, nil, false
}

// decodeU reads \uXXXX, or a surrogate pair \uXXXX\uXXXX, at b.
func decodeU(b []byte) (rune, int, bool) {
	hex := func(p []byte) (rune, bool) {
		if len(p) < 6 || p[0] != '\\' || p[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(p[2:6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex(b)
	if !ok {
		return 0, 0, false
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex(b[6:]); ok {
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return dec, 12, true
			}
		}
		return utf8.RuneError, 6, true
	}
	return r, 6, true
}
