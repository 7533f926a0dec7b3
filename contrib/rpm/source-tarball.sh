#!/usr/bin/env bash
# Make the RPM's Source0: the working tree's files (what git tracks, plus
# new files it does not ignore: on a clean clone that is `git archive HEAD`)
# and the vendored modules, under NAME-VERSION/, for an offline build.
#
#   contrib/rpm/source-tarball.sh VENDOR_DIR OUT.tar.gz NAME-VERSION
set -euo pipefail
if [ $# -ne 3 ]; then
	echo "usage: $0 VENDOR_DIR OUT.tar.gz NAME-VERSION" >&2
	exit 2
fi
vendor=$(realpath "$1")
out=$(realpath -m "$2")
prefix=$3
[ -f "$vendor/modules.txt" ] || { echo "$0: $vendor is not a vendor directory (make vendor)" >&2; exit 1; }
top=$(git rev-parse --show-toplevel)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

mkdir -p "$stage/$prefix"
cd "$top"
# Files deleted in the working tree but still tracked are skipped.
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	xargs -0 -r cp -a --parents -t "$stage/$prefix"
cp -a "$vendor" "$stage/$prefix/vendor"

# Stable metadata: the same tree gives the same tarball.
mtime=$(git log -1 --format=@%ct 2>/dev/null || echo @0)
mkdir -p "$(dirname "$out")"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" \
	-cf - "$prefix" | gzip -n > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
