#!/usr/bin/env bash
# Offline dependency audit: cargo-deny against a local RustSec advisory snapshot.
# The snapshot comes from R2R_ADVISORY_DB, or ../shared/data/advisory-db next to the checkout.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

source_db="${R2R_ADVISORY_DB:-$R2R_ROOT/../shared/data/advisory-db}"
[ -d "$source_db/crates" ] || die "no RustSec advisory snapshot at $source_db; set R2R_ADVISORY_DB to a copy of github.com/rustsec/advisory-db"

# cargo-deny looks for <root>/advisory-db-<hash of the default URL> and refuses a database it
# thinks is older than 90 days, judged by the git fetch time: give it a fresh local commit.
export DENY_DB_ROOT="$R2R_ROOT/target/advisory-dbs"
db="$DENY_DB_ROOT/advisory-db-3157b0e258782691"
rm -rf "$db"
mkdir -p "$db"
cp -r "$source_db/." "$db/"
rm -rf "$db/.git"
(
  cd "$db"
  git init -q
  git -c user.name=r2r -c user.email=r2r@localhost add -A
  git -c user.name=r2r -c user.email=r2r@localhost commit -qm "advisory snapshot"
  touch .git/FETCH_HEAD
)
cd "$R2R_ROOT"
# cargo-deny reads the metadata of every dependency for every platform (Windows-only crates
# included) and, offline, cannot download one: fetch them all from crates.io first (a fresh
# machine's cache holds only what its own builds needed).
cargo fetch --locked
cargo deny --offline check advisories
