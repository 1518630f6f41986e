#!/usr/bin/env bash
# Installs what building and running the desk needs, and only what is missing:
# the wasm32 target, cargo-leptos (patched for rustc 1.95), wasm-bindgen-cli and npm binaryen.
# Everything comes from crates.io, rustup or npm; nothing is downloaded from GitHub or a CDN.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# The three installs run side by side: each spends part of its time on one core (downloads,
# a crate that builds alone, the link), so together they take little more than the longest.
pids=()
if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 2 minutes)"
  # Debug build: the CLI is quick enough and compiles in half the time.
  cargo install --debug --force wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" &
  pids+=($!)
fi

if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
  log "installing cargo-leptos $CARGO_LEPTOS_VERSION from its crates.io source"
  # Its lockfile pins cargo-util-schemas 0.14.2, which needs rustc 1.96; 0.14.1 builds on 1.95.
  (
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    curl -sSfL -o "$work/cargo-leptos.crate" \
      "https://static.crates.io/crates/cargo-leptos/cargo-leptos-$CARGO_LEPTOS_VERSION.crate"
    tar -xzf "$work/cargo-leptos.crate" -C "$work"
    cd "$work/cargo-leptos-$CARGO_LEPTOS_VERSION"
    cargo update -p cargo-util-schemas --precise 0.14.1
    cargo install --debug --path . --locked
  ) &
  pids+=($!)
fi

if [ ! -x "$R2R_TOOLS/node_modules/.bin/wasm-opt" ]; then
  log "installing binaryen@$BINARYEN_NPM_VERSION from npm (Debian's wasm-opt breaks hydration)"
  mkdir -p "$R2R_TOOLS"
  npm install --prefix "$R2R_TOOLS" --no-audit --no-fund --save-exact "binaryen@$BINARYEN_NPM_VERSION" >/dev/null &
  pids+=($!)
fi

for pid in "${pids[@]}"; do
  wait "$pid" || die "a build tool did not install (its output is above)"
done

log "tools ready: $(cargo leptos --version), $(wasm-bindgen --version), wasm-opt $(wasm-opt --version | awk '{print $3}')"
