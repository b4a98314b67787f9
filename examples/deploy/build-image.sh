#!/usr/bin/env bash
# Builds the validmaild image from this checkout: a static binary (no cgo,
# trimmed paths) and an empty base holding only it, a writable /tmp, the
# passwd entry of its unprivileged user and the build machine's CA bundle
# (for TLS to webhook receivers and mail relays; the build fails without
# one rather than produce an image that trusts nobody).
#
#   examples/deploy/build-image.sh [IMAGE]    # default localhost/validmaild:dev
#
# CONTAINER_ENGINE picks the tool (podman by default, docker works too).
set -euo pipefail
image="${1:-localhost/validmaild:dev}"
engine="${CONTAINER_ENGINE:-podman}"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT

(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/validmaild" ./examples/validmaild)
mkdir -p "$ctx/rootfs/tmp" "$ctx/rootfs/etc/ssl/certs"
chmod 1777 "$ctx/rootfs/tmp"
printf 'validmail:x:65532:65532:validmail:/nonexistent:/sbin/nologin\n' >"$ctx/rootfs/etc/passwd"
printf 'validmail:x:65532:\n' >"$ctx/rootfs/etc/group"
ca="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
[ -f "$ca" ] || { echo "no CA bundle at $ca (set CA_BUNDLE)" >&2; exit 1; }
cp "$ca" "$ctx/rootfs/etc/ssl/certs/ca-certificates.crt"
cp "$here/Containerfile" "$ctx/Containerfile"
build_args=()
[ "$engine" = podman ] && build_args+=(--runtime runc)
"$engine" build "${build_args[@]}" -q -t "$image" -f "$ctx/Containerfile" "$ctx"
