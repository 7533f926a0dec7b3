#!/usr/bin/env bash
# The systemd image plus systemd-container (machined, machinectl): a nested
# "systemd host" for tests that run a second engine inside a booted systemd
# and watch it register its containers with machined (docs/systemd.md,
# "machinectl"). Cached like the systemd image; prints the tarball's path.
#
#   hack/images/systemd-host.sh [OUT.tar]
set -euo pipefail
IMAGE_NAME=systemd-host EXTRA_PACKAGES=systemd-container exec "$(dirname "$0")/systemd.sh" "$@"
