#!/usr/bin/env bash
# Try our docker CLI against Debian's Docker Engine (docker.io, 20.10):
# starts a private dockerd on its own socket and directories, runs the CLI's
# end-to-end tests (cli/cli_test.go) against it, then stops that daemon by
# its PID and removes everything it created. Root only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v dockerd >/dev/null || apt-get install -y docker.io busybox-static

base=/var/tmp/clitest-docker
run=/var/run/clitest-docker
sock=/var/run/clitest-docker.sock
pidfile=/var/run/clitest-docker.pid
mkdir -p "$base" "$run"

dockerd --data-root "$base" --exec-root "$run" -H "unix://$sock" --pidfile "$pidfile" \
	--bridge=none --iptables=false --ip-forward=false >"$base.log" 2>&1 &
pid=$!
cleanup() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	# dockerd unmounts its overlays on a clean stop; sweep any it left.
	grep -o " $base[^ ]*\| $run[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l || true
	rm -rf "$base" "$run" "$sock" "$pidfile" "$base.log"
}
trap cleanup EXIT
for _ in $(seq 100); do
	[ -S "$sock" ] && curl -sf --unix-socket "$sock" http://x/_ping >/dev/null && break
	sleep 0.1
done

SDENGINE_CLI_TEST_HOST="unix://$sock" go test -count=1 -v ./cli/ "$@"
