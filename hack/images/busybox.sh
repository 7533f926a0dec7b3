#!/usr/bin/env bash
# Build a minimal busybox rootfs tarball for tests from Debian's busybox-static
# package, using this machine's own apt sources. The result is cached by the
# package version and copied to OUT.tar; the cache path is printed.
#
#   hack/images/busybox.sh [OUT.tar]
#   BUSYBOX_PACKAGE=busybox hack/images/busybox.sh [OUT.tar]
# Without OUT.tar it only builds (or finds) the cached tarball.
#
# BUSYBOX_PACKAGE=busybox takes Debian's dynamically linked busybox instead,
# with the shared libraries it needs from libc6. Its shell executes a
# command's file (busybox-static's runs its applets in itself,
# FEATURE_SH_STANDALONE), as the shell of the official busybox image does:
# critest's MaskedPaths spec needs that.
set -euo pipefail

if [ $# -gt 1 ]; then
	echo "usage: $0 [OUT.tar]" >&2
	exit 2
fi
out=${1:-}
pkg=${BUSYBOX_PACKAGE:-busybox-static}
case $pkg in
busybox-static | busybox) ;;
*)
	echo "$0: BUSYBOX_PACKAGE must be busybox-static or busybox, not $pkg" >&2
	exit 2
	;;
esac
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/sdengine/images"
mkdir -p "$cache_dir"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt drops privileges to _apt for downloads; let it write here.
chmod 0755 "$tmp"

installed_version() {
	dpkg-query -W -f '${Status} ${Version}\n' "$pkg" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'
}

# The version apt would download; falls back to the installed one when apt
# has no candidate (e.g. no package lists).
version=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ { print $2 }')
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
	version=$(installed_version)
fi
if [ -z "$version" ]; then
	echo "$0: cannot determine a version of $pkg" >&2
	exit 1
fi
# The recipe's revision is part of the cache key: a change to what this
# script puts in the image gets a file of its own, so that a cache built by
# an older recipe (which others may be using) is neither reused nor
# overwritten. Bump it with every change to the rootfs below.
recipe=r2
name=busybox
libc_version=""
if [ "$pkg" = busybox ]; then
	libc_version=$(apt-cache policy libc6 2>/dev/null | awk '/Candidate:/ { print $2 }')
	if [ -z "$libc_version" ] || [ "$libc_version" = "(none)" ]; then
		echo "$0: no candidate version of libc6" >&2
		exit 1
	fi
	name=busybox-dyn-libc6_${libc_version//[:\/]/_}
fi
cached="$cache_dir/$name-$recipe-${version//[:\/]/_}.tar"

if [ ! -s "$cached" ]; then
	bin=""
	if [ "$pkg" = busybox ]; then
		# No fallback to the host's files here: the libraries must be the
		# package's.
		if ! (cd "$tmp" && apt-get download -q "busybox=$version" "libc6=$libc_version" >"$tmp/download.log" 2>&1); then
			cat "$tmp/download.log" >&2
			echo "$0: cannot get busybox $version and libc6 $libc_version" >&2
			exit 1
		fi
		dpkg-deb -x "$tmp"/busybox_*.deb "$tmp/deb"
		dpkg-deb -x "$tmp"/libc6_*.deb "$tmp/libc6"
		bin="$tmp/deb/bin/busybox"
	elif (cd "$tmp" && apt-get download -q "$pkg=$version" >"$tmp/download.log" 2>&1); then
		dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/deb"
		bin="$tmp/deb/bin/busybox"
	elif [ "$(installed_version)" = "$version" ] && [ -x /bin/busybox ]; then
		echo "$0: apt-get download failed, using the installed /bin/busybox" >&2
		bin=/bin/busybox
	else
		cat "$tmp/download.log" >&2
		echo "$0: cannot get $pkg $version" >&2
		exit 1
	fi

	umask 022
	root="$tmp/rootfs"
	mkdir -p "$root/bin" "$root/etc" "$root/home" "$root/root" "$root/tmp" \
		"$root/var/spool/mail" "$root/var/www"
	install -m 0755 "$bin" "$root/bin/busybox"
	if [ "$pkg" = busybox ]; then
		# The program interpreter and the libraries busybox names
		# (DT_NEEDED), each at libc6's path for it.
		interp=$(readelf -lW "$bin" | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
		needed=$(readelf -dW "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
		for f in "$interp" $needed; do
			if [ "${f#/}" != "$f" ]; then
				src="$tmp/libc6$f"
			else
				src=$(find "$tmp/libc6" -name "$f" \( -type f -o -type l \) | head -n 1)
			fi
			if [ -z "$src" ] || [ ! -e "$src" ]; then
				echo "$0: libc6 $libc_version has no $f" >&2
				exit 1
			fi
			dst="$root/${src#"$tmp/libc6/"}"
			mkdir -p "$(dirname "$dst")"
			# A symlink (the interpreter's, say) is copied with its
			# target, read in libc6's tree, not the host's.
			if [ -L "$src" ]; then
				target=$(readlink "$src")
				case $target in
				/*) ;;
				*) target=$(dirname "${src#"$tmp/libc6"}")/$target ;;
				esac
				if [ -L "$tmp/libc6$target" ] || [ ! -f "$tmp/libc6$target" ]; then
					echo "$0: libc6 $libc_version: $f links to $target, not a file of it" >&2
					exit 1
				fi
				mkdir -p "$root$(dirname "$target")"
				cp -a "$tmp/libc6$target" "$root$target"
			fi
			cp -a "$src" "$dst"
		done
	fi
	# One symlink per applet, at the path busybox itself reports.
	"$root/bin/busybox" --list-full | sort -u | while read -r applet; do
		[ "$applet" = "bin/busybox" ] && continue
		mkdir -p "$root/$(dirname "$applet")"
		ln -sf /bin/busybox "$root/$applet"
	done
	# The users and groups of the official busybox image, with its uid and
	# gid numbers: tests run as "daemon", add "staff" or "audio" and expect
	# `id` to name them (root is in wheel there too).
	cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
PASSWD
	cat >"$root/etc/group" <<'GROUP'
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:
GROUP
	chmod 0700 "$root/root"
	chmod 1777 "$root/tmp"

	# Deterministic: sorted entries, fixed mtimes and owners.
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
		-C "$root" -cf "$tmp/rootfs.tar" .
	mv "$tmp/rootfs.tar" "$cached"
fi

if [ -n "$out" ] && [ "$(realpath -m "$out")" != "$(realpath "$cached")" ]; then
	cp "$cached" "$out.tmp.$$"
	mv "$out.tmp.$$" "$out"
fi
echo "$cached"
