package systemd

import (
	"encoding/hex"
	"strings"
)

// MaxMachineNameLen is machined's limit (HOST_NAME_MAX).
const MaxMachineNameLen = 64

// MachineName turns a container name into a name machined accepts. The
// rules are machined's (hostname_is_valid in systemd 252, checked against
// the real daemon): only [a-zA-Z0-9], '-' and '.'; not empty; no leading
// or trailing '-' or '.'; no "..", ".-" or "-."; at most 64 characters.
// systemd 252 rejects '_' even though older documentation allows it, so it
// is mapped to '-' like every other invalid character. Docker's leading
// '/' is dropped. When nothing usable is left, the first 32 hex digits of
// the container ID are used. Distinct names may map to the same machine
// name; machined then refuses the second registration (MachineExists).
func MachineName(containerName, containerID string) string {
	var b strings.Builder
	last := byte(0) // last byte written; 0 at the start
	for i := 0; i < len(containerName); i++ {
		c := containerName[i]
		switch {
		case isAlnum(c):
		case c == '.':
			// A dot may only follow a letter or digit.
			if last == 0 || last == '.' || last == '-' {
				continue
			}
		default:
			c = '-'
			if last == 0 || last == '.' || last == '-' {
				// Runs of invalid characters become one '-', and a '-'
				// never starts the name or follows a '.'.
				continue
			}
		}
		b.WriteByte(c)
		last = c
	}
	name := b.String()
	if len(name) > MaxMachineNameLen {
		name = name[:MaxMachineNameLen]
	}
	name = strings.TrimRight(name, "-.")
	if name == "" {
		name = idPrefix(containerID)
	}
	return name
}

// idPrefix is the first 32 characters of id, lower-cased, keeping only
// what is valid in a machine name; "container" for a degenerate id, so
// the result is never empty.
func idPrefix(id string) string {
	if len(id) > 32 {
		id = id[:32]
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		if c := id[i]; isAlnum(c) {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "container"
	}
	return strings.ToLower(b.String())
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// MachineID is the machine id machined is told: the 16 bytes the first 32
// hex digits of the container ID decode to, which is what the container's
// /etc/machine-id holds when it is initialised from container_uuid. An ID
// too short or not hex gives the zero id, which RegisterMachine sends as
// "no id" so that machined makes one up.
func MachineID(containerID string) [16]byte {
	var id [16]byte
	if len(containerID) < 32 {
		return id
	}
	if _, err := hex.Decode(id[:], []byte(containerID[:32])); err != nil {
		return [16]byte{}
	}
	return id
}
