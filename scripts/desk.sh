#!/usr/bin/env bash
# Runs the desk on http://127.0.0.1:3000: SQLite under data/, ShopLite in a local forge
# (data/shoplite.git), the sandbox, and the crew in-process with the scripted model.
# Installs missing build tools, writes .env.local on first run, builds the release.
# Extra arguments go to `r2r serve` (e.g. --addr 0.0.0.0:8080).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"

./scripts/install-tools.sh
# The sandbox the crew's and the desk's test runs use: Docker Engine (no bridge, no iptables),
# bubblewrap and the locally built base image (nothing is pulled from a registry).
eval "$(./scripts/sandbox-host.sh)"
export R2R_SANDBOX_IMAGE DOCKER_HOST
log "building the desk (release; the first build takes several minutes)"
cargo leptos build --release --split
./target/release/r2r setup
log "starting the desk — open http://${R2R_ADDR:-127.0.0.1:3000}/ (Ctrl-C stops it)"
exec ./target/release/r2r serve "$@"
