package jsonfilelog

import (
	"time"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendEntry appends one json-file line (including the trailing '\n') to
// buf. It is hand-rolled rather than json.Marshal because it sits on the hot
// path of every byte a container prints, and the field order must be exactly
// Docker's: log, stream, time.
func appendEntry(buf []byte, stream string, line []byte, t time.Time) []byte {
	buf = append(buf, `{"log":`...)
	buf = appendJSONString(buf, line)
	buf = append(buf, `,"stream":`...)
	buf = appendJSONString(buf, []byte(stream))
	buf = append(buf, `,"time":"`...)
	buf = t.UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, "\"}\n"...)
	return buf
}

// appendJSONString quotes s the way encoding/json does (including the HTML
// escapes Docker's logs also carry), replacing invalid UTF-8 with U+FFFD so
// every line stays valid JSON whatever a process writes.
func appendJSONString(buf []byte, s []byte) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '"', '\\':
				buf = append(buf, '\\', b)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i++
			start = i
			continue
		}
		// U+2028/U+2029 are valid JSON but break JavaScript consumers.
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
