#!/usr/bin/env bash
# Installs the real ingestion clients the integration tests drive
# (crates/cli/tests/ingest_protocols.rs):
#   python  the Python Elasticsearch client and the OpenTelemetry Python SDK
#           with its OTLP/HTTP log exporter, pinned in
#           .ci/clients-requirements.txt, into a project-local virtualenv
#           (.venv-clients, or $RUNAKEFLI_CLIENTS_VENV); needs python3 with
#           its venv module and network access to PyPI;
#   logger  util-linux `logger`, the syslog sender: installed with apt-get
#           (package bsdutils) when missing and running as root;
#   chdb    chdb-core (the ClickHouse engine in-process), pinned in
#           .ci/chdb-requirements.txt, into its own virtualenv (.venv-chdb, or
#           $RUNAKEFLI_CHDB_VENV) for crates/clickhouse/tests/chdb.rs, which
#           puts a small ClickHouse HTTP front on it. Installed --no-deps:
#           the front uses only chdb's session API, not pandas/pyarrow.
#
# Usage: .ci/setup-clients.sh [python] [logger] [chdb]   (no argument: all)
#
# The tests run this themselves on first use (crates/cli/tests/clients/mod.rs).
# When the virtualenv is complete, a copy of the requirements file is left in
# it as a stamp; the tests rerun the `python` part whenever the two differ.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${RUNAKEFLI_CLIENTS_VENV:-.venv-clients}"
PYTHON="${PYTHON:-python3}"
REQUIREMENTS=.ci/clients-requirements.txt
STAMP="$VENV/installed-requirements.txt"

setup_python() {
    command -v "$PYTHON" >/dev/null 2>&1 || {
        echo "$PYTHON not found: install Python 3 with its venv module (Debian/Ubuntu: python3-venv)" >&2
        return 1
    }
    rm -f "$STAMP"
    # A virtualenv whose creation failed half-way (e.g. no ensurepip) has a
    # python but no pip: make it again from scratch.
    if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        "$PYTHON" -m venv --clear "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS"
    "$VENV/bin/python" -c 'import elasticsearch, opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http; print("clients ok: elasticsearch", elasticsearch.__versionstr__)'
    cp "$REQUIREMENTS" "$STAMP"
}

setup_chdb() {
    local venv="${RUNAKEFLI_CHDB_VENV:-.venv-chdb}" req=.ci/chdb-requirements.txt
    command -v "$PYTHON" >/dev/null 2>&1 || {
        echo "$PYTHON not found: install Python 3 with its venv module (Debian/Ubuntu: python3-venv)" >&2
        return 1
    }
    if cmp -s "$req" "$venv/installed-requirements.txt"; then
        return 0
    fi
    rm -f "$venv/installed-requirements.txt"
    if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
        "$PYTHON" -m venv --clear "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$req"
    "$venv/bin/python" -c 'import chdb; print("chdb ok:", chdb.__version__)'
    cp "$req" "$venv/installed-requirements.txt"
}

setup_logger() {
    if ! command -v logger >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
        && [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bsdutils
    fi
    command -v logger >/dev/null 2>&1 || {
        echo "logger (util-linux) is missing: install it (Debian/Ubuntu: sudo apt-get install bsdutils)" >&2
        return 1
    }
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(python logger chdb)
for part in "${parts[@]}"; do
    case "$part" in
        python) setup_python ;;
        logger) setup_logger ;;
        chdb) setup_chdb ;;
        *) echo "unknown part: $part (expected python, logger or chdb)" >&2; exit 2 ;;
    esac
done
