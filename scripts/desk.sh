#!/usr/bin/env bash
# Runs the desk on http://127.0.0.1:3000 (SQLite under data/, the ShopLite demo).
# Installs missing build tools, writes .env.local on first run, builds the release.
# Extra arguments go to `r2r serve` (e.g. --addr 0.0.0.0:8080).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"

./scripts/install-tools.sh
log "building the desk (release; the first build takes several minutes)"
cargo leptos build --release
./target/release/r2r setup
log "starting the desk — open http://${R2R_ADDR:-127.0.0.1:3000}/ (Ctrl-C stops it)"
exec ./target/release/r2r serve "$@"
