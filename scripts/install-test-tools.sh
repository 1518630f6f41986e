#!/usr/bin/env bash
# Installs and starts what the test suite needs, and only what is missing: Chromium (apt),
# Playwright and axe (npm, exact pins, no browser download), cargo-deny, a running
# PostgreSQL with a test role, and aiosmtpd (PyPI, in a venv) as the real SMTP server the
# notification tests deliver to. Prints `export R2R_TEST_POSTGRES_URL=…` and
# `export R2R_TEST_SMTP_PYTHON=…` on stdout.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

apt_ready=0
apt_install() {
  if [ "$apt_ready" -eq 0 ]; then
    as_root apt-get update -qq >&2
    apt_ready=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >&2
}

if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  log "installing Chromium from Debian"
  apt_install chromium
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  log "installing PostgreSQL from Debian"
  apt_install postgresql
fi

if ! cargo deny --version 2>/dev/null | grep -q "$CARGO_DENY_VERSION"; then
  log "installing cargo-deny $CARGO_DENY_VERSION (about 3 minutes)"
  cargo install --debug --locked cargo-deny --version "$CARGO_DENY_VERSION" >&2
fi

if [ ! -d "$R2R_ROOT/end2end/node_modules/@playwright/test" ] || [ "$R2R_ROOT/end2end/package-lock.json" -nt "$R2R_ROOT/end2end/node_modules/.package-lock.json" ]; then
  log "installing Playwright and axe from npm (no browser download)"
  (cd "$R2R_ROOT/end2end" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >&2)
fi

# aiosmtpd: the notification tests start it on a loopback port and read what it received.
smtp_venv="$R2R_ROOT/.tools/smtp-venv"
if ! "$smtp_venv/bin/python" -c "import aiosmtpd" 2>/dev/null; then
  if ! command -v python3 >/dev/null 2>&1; then
    log "installing Python from Debian"
    apt_install python3 python3-venv
  fi
  rm -rf "$smtp_venv"
  if ! python3 -m venv "$smtp_venv" >&2 2>/dev/null; then
    log "installing python3-venv from Debian"
    apt_install python3-venv
    python3 -m venv "$smtp_venv" >&2
  fi
  log "installing aiosmtpd $AIOSMTPD_VERSION from PyPI"
  "$smtp_venv/bin/python" -m pip install --quiet --disable-pip-version-check "aiosmtpd==$AIOSMTPD_VERSION" >&2
fi
echo "export R2R_TEST_SMTP_PYTHON='$smtp_venv/bin/python'"

# PostgreSQL: start the first cluster (create one if there is none), then a test role with a
# random password (made once per machine).
cluster="$(pg_lsclusters -h 2>/dev/null | head -1 || true)"
if [ -z "$cluster" ]; then
  version="$(ls /usr/lib/postgresql | sort -n | tail -1)"
  log "creating PostgreSQL cluster $version main"
  as_root pg_createcluster "$version" main >&2
  cluster="$(pg_lsclusters -h | head -1)"
fi
read -r pg_version pg_name pg_port pg_status _ <<<"$cluster"
if [ "$pg_status" != "online" ]; then
  log "starting PostgreSQL $pg_version/$pg_name on port $pg_port"
  as_root pg_ctlcluster "$pg_version" "$pg_name" start >&2
fi
for _ in $(seq 1 30); do
  as_root runuser -u postgres -- pg_isready -q -p "$pg_port" && break
  sleep 1
done
psql_admin() { as_root runuser -u postgres -- psql -p "$pg_port" -v ON_ERROR_STOP=1 -qAt "$@"; }
# The role's password is made once per machine and kept root-only beside the cluster, so two
# test runs on one machine (two checkouts, or CI beside a developer) do not lock each other out
# by each setting a new one.
password_file="/var/lib/postgresql/r2r_test.password"
role_exists="$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'r2r_test'")"
if [ "$role_exists" = "1" ] && as_root test -s "$password_file"; then
  password="$(as_root cat "$password_file")"
else
  password="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  if [ "$role_exists" = "1" ]; then
    psql_admin -c "ALTER ROLE r2r_test LOGIN CREATEDB PASSWORD '$password'" >&2
  else
    psql_admin -c "CREATE ROLE r2r_test LOGIN CREATEDB PASSWORD '$password'" >&2
  fi
  as_root install -m 600 /dev/null "$password_file"
  printf '%s' "$password" | as_root tee "$password_file" >/dev/null
fi
# Databases left by earlier runs of the suite (one another run is using cannot be dropped, and
# is left alone).
for db in $(psql_admin -c "SELECT datname FROM pg_database WHERE datname LIKE 'r2r\_test\_%'"); do
  psql_admin -c "DROP DATABASE IF EXISTS \"$db\"" >&2 || true
done
echo "export R2R_TEST_POSTGRES_URL='postgres://r2r_test:$password@127.0.0.1:$pg_port/postgres'"
