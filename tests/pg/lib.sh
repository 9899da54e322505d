# Sourced by tests that need a PostgreSQL server: starts a throwaway one
# (Debian's postgresql: initdb and pg_ctl) in a temporary directory, reachable
# only through a unix socket in it, and stops it and removes everything at
# exit. Not a test itself.
#
#   pg_need        find the server binaries (skip, exit 77, without them
#                  unless TFTAP_REQUIRE_PEERS=1: then it is a failure)
#   pg_start       initdb (once) and start; creates database "tftap"
#   pg_stop        stop (fast: sessions are terminated at once)
#   pg_uri [DB]    the libpq URI of DB (default tftap)
#   pg_e2e_start   pg_start for a test on tests/e2e/lib.sh: ok/not_ok, sets URI
#   pg_psql SQL    run SQL in database tftap, unaligned, tuples only
#
# initdb refuses to run as root: as root the cluster belongs to the
# "postgres" account (runuser), else to the current user.

pg_bin=${TFTAP_PG_BIN:-}
pg_dir=
pg_runas=()

pg_need() {
    local d
    if [ -z "$pg_bin" ]; then
        for d in /usr/lib/postgresql/*/bin; do
            [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && pg_bin=$d
        done
    fi
    if [ -z "$pg_bin" ] || ! command -v psql >/dev/null; then
        if [ "${TFTAP_REQUIRE_PEERS:-0}" = 1 ]; then
            echo "$(basename "$0"): PostgreSQL server binaries missing (scripts/install-deps: postgresql)"
            echo "$(basename "$0"): 0 passed, 1 failed"
            exit 1
        fi
        echo "$(basename "$0"): skipped, PostgreSQL server binaries missing (scripts/install-deps)"
        exit 77
    fi
}

# The server's tools run from / (as root they run as another user, who may
# not be able to enter the current directory).
pg_as() { (cd / && "${pg_runas[@]}" "$@"); }

pg_cleanup() {
    if [ -n "$pg_dir" ] && [ -d "$pg_dir" ]; then
        [ -f "$pg_dir/data/postmaster.pid" ] &&
            pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -w -s -m immediate stop >/dev/null 2>&1
        rm -rf "$pg_dir"
    fi
}

pg_start() {
    pg_need
    if [ -z "$pg_dir" ]; then
        # Short: a unix socket path must fit in 108 bytes.
        pg_dir=$(mktemp -d /tmp/tftap-pg.XXXXXX)
        if [ "$(id -u)" = 0 ]; then
            chown postgres:postgres "$pg_dir"
            pg_runas=(runuser -u postgres --)
        fi
        if ! pg_as "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U tftap -E UTF8 \
            --locale=C.UTF-8 --no-sync >"$pg_dir/initdb.log" 2>&1; then
            echo "pg_start: initdb failed:"
            cat "$pg_dir/initdb.log"
            return 1
        fi
        pg_fresh=1
    fi
    if ! pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -w -s -l "$pg_dir/log" \
        -o "-k $pg_dir -c listen_addresses= -c fsync=off -c max_connections=200" start; then
        echo "pg_start: the server did not start:"
        tail -20 "$pg_dir/log"
        return 1
    fi
    if [ "${pg_fresh:-0}" = 1 ]; then
        pg_fresh=0
        psql -q -X "$(pg_uri postgres)" -c 'CREATE DATABASE tftap' >/dev/null || return 1
    fi
}

pg_stop() {
    pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -w -s -m fast stop
}

# pg_e2e_start: for a test on tests/e2e/lib.sh: start the server (a test
# without one fails there and ends), and set URI.
pg_e2e_start() {
    pg_start || {
        not_ok "PostgreSQL server started"
        finish
    }
    ok "PostgreSQL server started"
    URI=$(pg_uri)
}

pg_uri() { echo "postgresql:///${1:-tftap}?host=$pg_dir&user=tftap"; }

pg_psql() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$(pg_uri)" -c "$1"; }
