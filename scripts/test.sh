#!/usr/bin/env bash
# Runs every suite: formatting, lints (server and WASM separately), the WASM dependency check,
# the offline dependency audit, unit and integration tests against SQLite and PostgreSQL, the
# sandbox escape suite against Docker and bubblewrap, and
# the Playwright browser scenarios against the release build. Installs what is missing first.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"

# A clean clone gains nothing from incremental compilation, and its caches double the disk used.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

suite_start=$(date +%s)
timings=()
step() {
  local name="$1"; shift
  log "── $name"
  local start=$(date +%s)
  "$@"
  timings+=("$(printf '%-34s %4ss' "$name" $(( $(date +%s) - start )))")
}

SERVER_CRATES=(-p server -p domain -p store -p shoplite -p sandbox -p crew -p forge -p api-types -p app --features app/ssr)
WASM_CRATES=(-p frontend -p domain -p shoplite -p api-types --target wasm32-unknown-unknown)

step "build tools"          ./scripts/install-tools.sh
eval "$(./scripts/install-test-tools.sh)"
export R2R_TEST_POSTGRES_URL R2R_TEST_SMTP_PYTHON
# The notification tests fail instead of skipping when aiosmtpd is missing.
export R2R_TEST_SMTP_REQUIRED=1
# The sandbox: Docker Engine (no bridge, no iptables), bubblewrap, the local base image.
# With R2R_SANDBOX_REQUIRED=1 the escape suite fails instead of skipping a backend.
eval "$(./scripts/sandbox-host.sh)"
export R2R_SANDBOX_IMAGE DOCKER_HOST
export R2R_SANDBOX_REQUIRED=1
step "format"               cargo fmt --all --check
step "clippy (server, ssr)" cargo clippy "${SERVER_CRATES[@]}" --all-targets -- -D warnings
step "clippy (wasm32)"      cargo clippy "${WASM_CRATES[@]}" -- -D warnings
step "wasm dependencies"    ./scripts/check-wasm-deps.sh
step "dependency audit"     ./scripts/audit.sh
step "unit + integration"   cargo test "${SERVER_CRATES[@]}"
step "release build"        cargo leptos build --release --split
step "wasm size"            ./scripts/check-wasm-size.sh
step "airlock accuracy"     ./target/release/r2r --env-file /dev/null airlock eval \
                              --data "${R2R_SHARED_DATA:-$R2R_ROOT/../shared/data}" \
                              --require-detection 97 --allow-false-positives 1
step "browser scenarios"    bash -c 'cd end2end && npx playwright test'

log "all suites passed in $(( $(date +%s) - suite_start ))s"
printf '  %s\n' "${timings[@]}" >&2
