package cri

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// processUser is the identity a container's process really runs with, as
// ContainerStatus reports it (the kubelet shows it in the pod's status):
// read from /proc/<pid>/status rather than recomputed from the request, so
// it is what the image's /etc/passwd and /etc/group and the supplemental
// groups policy made of it.
func processUser(pid int) (*runtimeapi.ContainerUser, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("container process %d: %w", pid, err)
	}
	return parseProcUser(b)
}

// parseProcUser reads the Uid, Gid (real ids, the first of each line) and
// Groups lines of a /proc/<pid>/status.
func parseProcUser(status []byte) (*runtimeapi.ContainerUser, error) {
	u := &runtimeapi.LinuxContainerUser{}
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		switch key {
		case "Uid", "Gid":
			if len(fields) == 0 {
				return nil, fmt.Errorf("process status: empty %s line", key)
			}
			id, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("process status: %s: %w", key, err)
			}
			if key == "Uid" {
				u.Uid = id
			} else {
				u.Gid = id
			}
			seen++
		case "Groups":
			for _, f := range fields {
				g, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("process status: Groups: %w", err)
				}
				u.SupplementalGroups = append(u.SupplementalGroups, g)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("process status: %w", err)
	}
	if seen != 2 {
		return nil, fmt.Errorf("process status: no Uid or Gid line")
	}
	return &runtimeapi.ContainerUser{Linux: u}, nil
}
