#!/usr/bin/env bash
# Installs what the web UI's browser test (crates/cli/tests/ui_browser.rs) needs:
#   chromium  Debian's package, with apt-get, when /usr/bin/chromium is
#             missing and running as root (no browser download: Playwright
#             drives this system Chromium);
#   venv      Playwright for Python, pinned in .ci/ui-requirements.txt, in
#             the project-local virtualenv .venv-ui (or $RUNAKEFLI_UI_VENV).
#
# Usage: .ci/setup-ui.sh [chromium] [venv]   (no argument: both)
#
# When the virtualenv is complete, a copy of the requirements file is left
# in it as a stamp; the test checks the stamp and fails, naming this script,
# when it is missing or stale.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${RUNAKEFLI_UI_VENV:-.venv-ui}"
PYTHON="${PYTHON:-python3}"
REQUIREMENTS=.ci/ui-requirements.txt
STAMP="$VENV/installed-requirements.txt"

setup_chromium() {
    if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 \
        && [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 chromium
    fi
    [ -x /usr/bin/chromium ] || {
        echo "/usr/bin/chromium is missing: install it (Debian: sudo apt-get install chromium)" >&2
        return 1
    }
}

setup_venv() {
    command -v "$PYTHON" >/dev/null 2>&1 || {
        echo "$PYTHON not found: install Python 3 with its venv module (Debian/Ubuntu: python3-venv)" >&2
        return 1
    }
    if cmp -s "$REQUIREMENTS" "$STAMP"; then
        return 0
    fi
    rm -f "$STAMP"
    if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        "$PYTHON" -m venv --clear "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS"
    "$VENV/bin/python" -c 'import playwright.sync_api; print("playwright ok")'
    cp "$REQUIREMENTS" "$STAMP"
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(chromium venv)
for part in "${parts[@]}"; do
    case "$part" in
        chromium) setup_chromium ;;
        venv) setup_venv ;;
        *) echo "unknown part: $part (expected chromium or venv)" >&2; exit 2 ;;
    esac
done
