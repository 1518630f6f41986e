#!/usr/bin/env bash
# Prints the desk's benchmark figures (benchmarks are never timed tests):
#   ledger: commands/s with 32 writers on distinct bugs, against the seed design (one JSON
#   document per workspace written by compare-and-swap), on SQLite and on PostgreSQL.
# Starts PostgreSQL like the test command and uses a fresh scratch database for each run.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$R2R_ROOT"

eval "$(./scripts/install-test-tools.sh)"
cargo build --release -p server --bin r2r >&2
r2r=./target/release/r2r

log "ledger benchmark on SQLite (temporary file)"
"$r2r" --env-file /dev/null bench ledger "$@"

scratch="r2r_test_bench_$$"
admin="$R2R_TEST_POSTGRES_URL"
pg_url="${admin%/*}/$scratch"
log "ledger benchmark on PostgreSQL (scratch database $scratch)"
as_root runuser -u postgres -- psql -qAt -c "CREATE DATABASE $scratch OWNER r2r_test" >/dev/null
trap 'as_root runuser -u postgres -- psql -qAt -c "DROP DATABASE IF EXISTS $scratch" >/dev/null' EXIT
"$r2r" --env-file /dev/null bench ledger --database-url "$pg_url" "$@"
