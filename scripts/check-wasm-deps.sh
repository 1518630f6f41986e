#!/usr/bin/env bash
# The browser bundle must not pull in server-only crates.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"
tree="$(cargo tree -p frontend --target wasm32-unknown-unknown -e normal --prefix none --format '{p}')"
bad=0
for crate in sqlx sqlx-core tokio axum hyper mio bollard reqwest leptos_axum argon2 store sandbox; do
  if grep -qE "^$crate v" <<<"$tree"; then
    echo "the WASM bundle depends on server-only crate: $crate" >&2
    cargo tree -p frontend --target wasm32-unknown-unknown -e normal -i "$crate" >&2 || true
    bad=1
  fi
done
[ "$bad" -eq 0 ] || exit 1
log "WASM dependency check: none of the server-only crates is in the bundle ($(wc -l <<<"$tree") crates checked)"
