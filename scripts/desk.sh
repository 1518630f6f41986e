#!/usr/bin/env bash
# Runs the desk on http://127.0.0.1:3000: SQLite under data/, ShopLite in a local forge
# (data/shoplite.git), the sandbox, and the crew in-process with the scripted model.
# Installs missing build tools, writes .env.local on first run, builds the release.
# Extra arguments go to `r2r serve` (e.g. --addr 0.0.0.0:8080).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"

# The sandbox the crew's and the desk's test runs use: Docker Engine (no bridge, no iptables),
# bubblewrap and the locally built base image (nothing is pulled from a registry). Preparing
# it is mostly downloads, so it runs while the tools and the desk build (mostly the CPU).
sandbox_env="$(mktemp)"
trap 'rm -f "$sandbox_env"' EXIT
./scripts/sandbox-host.sh > "$sandbox_env" &
sandbox=$!
./scripts/install-tools.sh
log "building the desk (release; the first build takes several minutes)"
cargo leptos build --release --split
log "waiting for the sandbox to be ready"
wait "$sandbox" || die "the sandbox could not be prepared (its output is above)"
eval "$(cat "$sandbox_env")"
rm -f "$sandbox_env"
export R2R_SANDBOX_IMAGE DOCKER_HOST
./target/release/r2r setup
log "starting the desk — open http://${R2R_ADDR:-127.0.0.1:3000}/ (Ctrl-C stops it)"
exec ./target/release/r2r serve "$@"
