#!/usr/bin/env bash
# Installs and starts what the test-suite needs outside Python. Sourced by .ci/run.
set -euo pipefail

# --- PostgreSQL for the store tests: a throw-away cluster on 127.0.0.1, free port ---
if [ -z "${RAGMETER_TEST_PG_URL:-}" ]; then
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
  pg_dir=$(mktemp -d /tmp/ragmeter-pg.XXXXXX)
  chown postgres "$pg_dir"
  pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  su postgres -s /bin/sh -c "'$pg_bin/initdb' -D '$pg_dir/data' -U postgres -A trust -E UTF8 --no-locale" >/dev/null
  su postgres -s /bin/sh -c "'$pg_bin/pg_ctl' -D '$pg_dir/data' -l '$pg_dir/log' -w -t 60 \
    -o \"-h 127.0.0.1 -p $pg_port -k '$pg_dir' -c fsync=off\" start" >/dev/null
  su postgres -s /bin/sh -c "'$pg_bin/createdb' -h 127.0.0.1 -p $pg_port -U postgres ragmeter_test"
  export RAGMETER_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$pg_port/ragmeter_test"
  # stop the throw-away cluster when the sourcing script (.ci/run) exits, whatever its outcome
  trap "su postgres -s /bin/sh -c \"'$pg_bin/pg_ctl' -D '$pg_dir/data' -m fast stop\" >/dev/null 2>&1 || true" EXIT
  echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') for the store tests at $RAGMETER_TEST_PG_URL (data in $pg_dir)"
fi

# --- Chromium for the HTML report browser test: Debian's package, run headless by the test ---
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
echo "$(chromium --version 2>/dev/null || echo 'chromium: not installed') for the HTML report test"
true
