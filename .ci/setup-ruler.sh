#!/usr/bin/env bash
# Installs the real Prometheus components the ruler's integration tests
# (crates/cli/tests/ruler.rs) start on loopback ports:
#   prometheus               2.42 (Debian 12), the remote-write receiver
#                            (--web.enable-remote-write-receiver) for
#                            recording rules;
#   prometheus-alertmanager  0.25 (Debian 12), where alerts are sent.
# With apt-get, as root, and only when a binary is missing. The tests start
# their own instances (own ports, own temporary storage); a service the
# package's postinst may start is not used.
set -euo pipefail

missing=()
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || missing+=(prometheus-alertmanager)
[ ${#missing[@]} -eq 0 ] && exit 0

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
    echo "missing: ${missing[*]}: install them (Debian/Ubuntu: sudo apt-get install prometheus prometheus-alertmanager)" >&2
    exit 1
fi
command -v prometheus >/dev/null 2>&1 && command -v prometheus-alertmanager >/dev/null 2>&1
