#!/usr/bin/env bash
# Build a slim Debian rootfs tarball with systemd as PID 1 candidate (systemd,
# systemd-sysv, dbus) for tests that boot systemd inside a container.
# Packages come from this machine's own apt sources. The tarball is cached,
# keyed by the package list, suite and this script; the cache path is printed.
#
#   hack/images/systemd.sh [OUT.tar]
# IMAGE_NAME and EXTRA_PACKAGES (comma-separated) make variants of it:
# hack/images/systemd-host.sh is one.
# Without OUT.tar it only builds (or finds) the cached tarball.
set -euo pipefail

if [ $# -gt 1 ]; then
	echo "usage: $0 [OUT.tar]" >&2
	exit 2
fi
out=${1:-}
name=${IMAGE_NAME:-systemd}
packages="systemd,systemd-sysv,dbus${EXTRA_PACKAGES:+,$EXTRA_PACKAGES}"
variant=minbase
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/sdengine/images"
mkdir -p "$cache_dir"

# shellcheck disable=SC1091
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ -z "$suite" ]; then
	echo "$0: no VERSION_CODENAME in /etc/os-release" >&2
	exit 1
fi
arch=$(dpkg --print-architecture)
key=$( { cat "$0"; echo "$packages $variant $suite $arch"; } | sha256sum | cut -c1-16)
cached="$cache_dir/$name-$suite-$arch-$key.tar"

if [ ! -s "$cached" ]; then
	if ! command -v mmdebstrap >/dev/null; then
		apt-get install -y mmdebstrap >&2
	fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT

	# Without a MIRROR argument mmdebstrap falls back to a public default;
	# passing existing sources files makes it paste them into the chroot, so
	# the build uses exactly the apt sources this machine is configured with.
	sources=()
	[ -s /etc/apt/sources.list ] && sources+=(/etc/apt/sources.list)
	for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -s "$f" ] && sources+=("$f")
	done
	if [ ${#sources[@]} -eq 0 ]; then
		echo "$0: no apt sources configured" >&2
		exit 1
	fi

	# The merged-usr hook installs usr-is-merged with the essential set;
	# otherwise apt satisfies init-system-helpers' "usrmerge | usr-is-merged"
	# with usrmerge, which drags in full perl (~30 MB).
	mmdebstrap --variant="$variant" --include="$packages" \
		--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/lintian/*' \
		--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/cache/debconf/*-old "$1"/var/log/*.log "$1"/var/log/apt/*' \
		--customize-hook='rm -f "$1/etc/hostname" "$1/etc/resolv.conf"' \
		--customize-hook=': > "$1/etc/machine-id"' \
		"$suite" "$tmp/rootfs.tar" "${sources[@]}" >&2
	mv "$tmp/rootfs.tar" "$cached"
fi

if [ -n "$out" ] && [ "$(realpath -m "$out")" != "$(realpath "$cached")" ]; then
	cp "$cached" "$out.tmp.$$"
	mv "$out.tmp.$$" "$out"
fi
echo "$cached"
