package systemd

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// The one machine ID of a container. systemd in a container initialises
// /etc/machine-id from the container_uuid variable of PID 1's environment;
// the host's journal directory for the container and machined's
// registration must name the same 128 bits, or `journalctl -M`,
// `journalctl -D /var/log/journal/<id>` and `machinectl` each find a
// different machine. Every one of them takes the ID from here.

// ContainerUUIDVar is the environment variable systemd reads the ID from.
const ContainerUUIDVar = "container_uuid"

// ContainerMachineID returns a container's machine ID as 32 lower-case hex
// digits: the container_uuid of its environment when there is one (the
// user's value wins; the engine puts one in every container), else the
// first 32 hex digits of the container ID. A container_uuid systemd would
// not accept is an error.
func ContainerMachineID(containerID string, env []string) (string, error) {
	// The first one, as getenv(3) in systemd finds it.
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, ContainerUUIDVar+"="); ok {
			return ParseMachineID(v)
		}
	}
	if len(containerID) < 32 {
		return "", fmt.Errorf("container ID %q is too short for a machine ID", containerID)
	}
	return ParseMachineID(containerID[:32])
}

// ParseMachineID accepts what systemd takes for container_uuid: 32 hex
// digits, bare or as a UUID (8-4-4-4-12), and returns the bare lower-case
// form. The all-zero ID is refused, as systemd refuses it.
func ParseMachineID(s string) (string, error) {
	bare := s
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		bare = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	if len(bare) != 32 {
		return "", fmt.Errorf("invalid %s %q: want 32 hex digits or a UUID", ContainerUUIDVar, s)
	}
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(bare)); err != nil {
		return "", fmt.Errorf("invalid %s %q: want 32 hex digits or a UUID", ContainerUUIDVar, s)
	}
	if b == ([16]byte{}) {
		return "", fmt.Errorf("invalid %s %q: the all-zero ID is not a machine ID", ContainerUUIDVar, s)
	}
	return strings.ToLower(bare), nil
}

// UUID writes a bare 32-hex machine ID in UUID form, 8-4-4-4-12, as
// container_uuid carries it.
func UUID(machineID string) string {
	h := machineID
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
