#!/usr/bin/env bash
# Prints the desk's benchmark figures (benchmarks are never timed tests):
#   ledger: commands/s with 32 writers on distinct bugs, against the seed design (one JSON
#   document per workspace written by compare-and-swap), on SQLite and on PostgreSQL;
#   intake: reports/s over HTTP against raw single-row inserts, on SQLite and PostgreSQL,
#   with 20 and with 15,000 open bugs filed first;
#   desk: GET /desk latency and size with 1,000 and 15,000 bugs, and the server's CPU while
#   twenty live pages are open and nothing changes;
#   airlock: MB/s against a bare RegexSet pass over the shared corpus;
#   sandbox: ShopLite's reproduction bare, in bubblewrap and in Docker, and sandbox jobs/s
#   through the desk's queue with one and with two worker processes.
# Arguments are passed to the ledger benchmark.
# Starts PostgreSQL like the test command and uses a fresh scratch database for each run.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"

eval "$(./scripts/install-test-tools.sh)"
cargo build --release -p server --bin r2r >&2
r2r=./target/release/r2r

log "ledger benchmark on SQLite (temporary file)"
"$r2r" --env-file /dev/null bench ledger "$@"

admin="$R2R_TEST_POSTGRES_URL"
scratches=()
cleanup() {
  for db in "${scratches[@]}"; do
    as_root runuser -u postgres -- psql -qAt -c "DROP DATABASE IF EXISTS $db" >/dev/null
  done
}
trap cleanup EXIT
scratch_db() {
  local name="r2r_test_bench_$$_$1"
  as_root runuser -u postgres -- psql -qAt -c "CREATE DATABASE $name OWNER r2r_test" >/dev/null
  scratches+=("$name")
  scratch_url="${admin%/*}/$name"
}

scratch_db ledger
log "ledger benchmark on PostgreSQL"
"$r2r" --env-file /dev/null bench ledger --database-url "$scratch_url" "$@"

# Intake with a small backlog and with 15,000 open bugs: its cost should not grow with it.
for open in 20 15000; do
  log "intake benchmark on SQLite (temporary files), $open open bugs before"
  RUST_LOG=warn "$r2r" --env-file /dev/null bench intake --open-bugs "$open"
  scratch_db "intake_$open"; intake_db="$scratch_url"
  scratch_db "raw_$open"; raw_db="$scratch_url"
  log "intake benchmark on PostgreSQL, $open open bugs before"
  RUST_LOG=warn "$r2r" --env-file /dev/null bench intake --open-bugs "$open" \
    --database-url "$intake_db" --raw-database-url "$raw_db"
done

# The desk with 1,000 and 15,000 bugs: the dashboard's latency and size, and what open live
# pages cost while nothing changes.
for bugs in 1000 15000; do
  log "desk benchmark on SQLite (temporary file), $bugs bugs"
  RUST_LOG=warn "$r2r" --env-file /dev/null bench desk --bugs "$bugs"
  scratch_db "desk_$bugs"
  log "desk benchmark on PostgreSQL, $bugs bugs"
  RUST_LOG=warn "$r2r" --env-file /dev/null bench desk --bugs "$bugs" --database-url "$scratch_url"
done

log "airlock benchmark"
"$r2r" --env-file /dev/null bench airlock --data "${R2R_SHARED_DATA:-$R2R_ROOT/../shared/data}"

log "sandbox benchmark (bare host vs bubblewrap vs Docker)"
eval "$(./scripts/sandbox-host.sh)"
"$r2r" --env-file /dev/null bench sandbox

# Sandbox jobs through the desk's queue (R2R_SANDBOX_RUNNER=workers) with one and with two
# `r2r sandbox worker` processes, on PostgreSQL (bubblewrap sandboxes on this host).
for workers in 1 2; do
  scratch_db "workers_$workers"
  log "sandbox worker benchmark on PostgreSQL, $workers worker(s)"
  RUST_LOG=warn "$r2r" --env-file /dev/null bench workers --workers "$workers" --jobs 200 \
    --backend bwrap --database-url "$scratch_url"
done
