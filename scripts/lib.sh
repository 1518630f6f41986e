#!/usr/bin/env bash
# Shared helpers for the scripts in this folder: logging, timing and the pinned tool versions.
set -euo pipefail

R2R_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export R2R_ROOT

# Pinned tool versions. wasm-bindgen-cli must equal the `wasm-bindgen` pin in Cargo.toml.
CARGO_LEPTOS_VERSION="0.3.11"
WASM_BINDGEN_VERSION="0.2.130"
CARGO_DENY_VERSION="0.20.2"
AIOSMTPD_VERSION="1.4.6"
BINARYEN_NPM_VERSION="132.0.0"

# npm-installed tools (binaryen's wasm-opt) live under one prefix inside the checkout.
R2R_TOOLS="$R2R_ROOT/.tools"
export PATH="$HOME/.cargo/bin:$R2R_TOOLS/node_modules/.bin:$PATH"

log() { printf '\033[1m[r2r]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31m[r2r] error:\033[0m %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
