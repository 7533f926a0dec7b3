package runconfig

import (
	"fmt"

	containertypes "github.com/docker/docker/api/types/container"

	"github.com/sdengine/engine/pkg/errdefs"
)

// ValidateNamespaceModes refuses an IPC or UTS mode Docker does not know
// (400, Docker's messages). Whether a known mode is honoured is not
// decided here.
func ValidateNamespaceModes(hc *containertypes.HostConfig) error {
	if !hc.IpcMode.Valid() {
		return errdefs.InvalidParameter(fmt.Errorf("invalid IPC mode: %v", hc.IpcMode))
	}
	if !hc.UTSMode.Valid() {
		return errdefs.InvalidParameter(fmt.Errorf("invalid UTS mode: %v", hc.UTSMode))
	}
	return nil
}

// ValidateAnnotations refuses what Docker refuses in HostConfig.Annotations:
// an empty key (400, Docker's message).
func ValidateAnnotations(annotations map[string]string) error {
	if _, ok := annotations[""]; ok {
		return errdefs.InvalidParameter(fmt.Errorf("invalid Annotations: the empty string is not permitted as an annotation key"))
	}
	return nil
}
