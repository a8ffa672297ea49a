#!/bin/sh
# Prints the Debian/Ubuntu packages that provide the shared libraries the given binaries load,
# one per line, sorted: the build stage of the Dockerfiles in docker/ runs it on the binaries it
# built, and the runtime stage installs exactly that list (so the runtime image holds only what
# `ldd` says is needed, with the package names right for the distribution of the build stage,
# Debian bookworm or Ubuntu). Fails when a library is missing or belongs to no package.
#
#   docker/runtime-deps.sh BINARY...
set -eu
[ "$#" -gt 0 ] || { echo "usage: runtime-deps.sh BINARY..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for bin in "$@"; do
  ldd "$bin" >"$tmp/ldd"
  if grep -q 'not found' "$tmp/ldd"; then
    echo "runtime-deps.sh: $bin: a library was not found:" >&2
    cat "$tmp/ldd" >&2
    exit 1
  fi
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' "$tmp/ldd" >>"$tmp/libs"
done
: >"$tmp/packages"
sort -u "$tmp/libs" >"$tmp/libs.sorted"
while read -r lib; do
  real=$(readlink -f "$lib")
  pkg=""
  # With merged /usr a file is registered under /lib or under /usr/lib: try the path as found,
  # resolved, and with /usr added or removed.
  for p in "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}"; do
    pkg=$(dpkg-query -S "$p" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] && break
  done
  if [ -z "$pkg" ]; then
    echo "runtime-deps.sh: no package owns $lib (of $*)" >&2
    exit 1
  fi
  echo "$pkg" >>"$tmp/packages"
done <"$tmp/libs.sorted"
sort -u "$tmp/packages"
