#!/usr/bin/env bash
# Installs the real ingestion clients the integration tests drive
# (crates/cli/tests/ingest_protocols.rs) into a project-local virtualenv:
# the Python Elasticsearch client and the OpenTelemetry Python SDK with its
# OTLP/HTTP log exporter. Also checks for `logger` (util-linux/bsdutils),
# the syslog sender. Versions are pinned so test runs are repeatable.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${RUNAKEFLI_CLIENTS_VENV:-.venv-clients}"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    'elasticsearch==8.15.1' \
    'opentelemetry-api==1.27.0' \
    'opentelemetry-sdk==1.27.0' \
    'opentelemetry-exporter-otlp-proto-http==1.27.0'

if ! command -v logger >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq bsdutils
    fi
fi
command -v logger >/dev/null 2>&1 || { echo "logger (util-linux) is missing" >&2; exit 1; }
"$VENV/bin/python" -c 'import elasticsearch, opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http; print("clients ok: elasticsearch", elasticsearch.__versionstr__)'
