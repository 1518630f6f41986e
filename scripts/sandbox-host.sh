#!/usr/bin/env bash
# Prepares this host for the sandbox, installing only what is missing: Docker Engine from
# Debian (started with flags that leave the host's network alone), bubblewrap, and the local
# base image `r2r-sandbox-base:local`, built without any registry from Debian packages
# (debootstrap + `docker import`, about 3 minutes, once, and again when its package list
# changes). Prints `export R2R_SANDBOX_…` lines on
# stdout for the caller to eval.
#
#   ./scripts/sandbox-host.sh            # install + start + build the image if absent
#   ./scripts/sandbox-host.sh --rebuild  # build the image again
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGE="${R2R_SANDBOX_IMAGE:-r2r-sandbox-base:local}"
SOCKET=/var/run/docker.sock

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
# The Python and Go profiles under bubblewrap use the host's /usr.
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
[ -x /usr/bin/go ] || missing+=(golang-go)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]} from Debian"
  as_root apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# Docker Engine: no bridge, no iptables, no forwarding — containers get `--network none`.
if ! docker version >/dev/null 2>&1; then
  log "starting dockerd (no bridge, no iptables)"
  as_root bash -c "nohup dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
    >/var/log/r2r-dockerd.log 2>&1 &"
  for _ in $(seq 1 60); do
    docker version >/dev/null 2>&1 && break
    sleep 1
  done
  docker version >/dev/null 2>&1 || die "dockerd did not start; see /var/log/r2r-dockerd.log"
fi

# gcc + libc6-dev: the linker for Rust tests (the toolchain itself is mounted read-only);
# nodejs: the Node profiles; python3-pytest: the Python profile; golang-go: the Go profile.
# The list is the image's label, so an image built from an older list is built again.
PACKAGES="gcc,libc6-dev,nodejs,python3-pytest,golang-go"
built_with="$(docker image inspect "$IMAGE" --format '{{ index .Config.Labels "r2r.packages" }}' 2>/dev/null || true)"
if [ "${1:-}" = "--rebuild" ] || [ "$built_with" != "$PACKAGES" ]; then
  log "building $IMAGE from Debian packages (debootstrap, a few minutes)"
  rootfs="$(mktemp -d /var/tmp/r2r-rootfs.XXXXXX)"
  trap 'as_root rm -rf "$rootfs"' EXIT
  as_root debootstrap --variant=minbase --include="$PACKAGES" bookworm "$rootfs" \
    "${R2R_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
  as_root rm -rf "$rootfs/var/cache/apt/archives"/*.deb "$rootfs/var/lib/apt/lists"/*
  as_root tar -C "$rootfs" -c . | docker import \
    --change 'USER 10001:10001' --change 'WORKDIR /work' \
    --change "LABEL r2r.packages=$PACKAGES" - "$IMAGE" >&2
  log "built $IMAGE ($(docker image inspect "$IMAGE" --format '{{.Size}}') bytes)"
fi

echo "export R2R_SANDBOX_IMAGE='$IMAGE'"
echo "export DOCKER_HOST='unix://$SOCKET'"
