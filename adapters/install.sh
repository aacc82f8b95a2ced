#!/usr/bin/env bash
# Install the Python lock libraries the soak's adapters drive into a project-local
# virtual environment, adapters/.venv, from adapters/requirements.txt (pinned).
#
#   bash adapters/install.sh
#
# Idempotent: the environment is made once and the packages are installed again only
# when requirements.txt changed (its checksum is kept in the environment). Needs
# python3 with its venv module (python3-venv is installed with apt-get when missing)
# and the package registry. harness/redis-image/build.sh runs this script, so the
# README's test command installs what the adapter tests need on a fresh machine.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
REQS="$HERE/requirements.txt"
STAMP="$VENV/locklab-requirements.sha256"

log() { printf '[adapters/install.sh] %s\n' "$*"; }
die() { printf '[adapters/install.sh] error: %s\n' "$*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 is not installed"
want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
    log "adapters/.venv is up to date ($(grep -c '==' "$REQS") pinned packages)"
    exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
    log "python3 -m venv adapters/.venv"
    if ! python3 -m venv "$VENV" </dev/null; then
        command -v apt-get >/dev/null || die "python3 -m venv failed and apt-get is missing: install python3-venv"
        rm -rf "$VENV"
        log "apt-get install -y python3-venv"
        env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
        env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv </dev/null
        python3 -m venv "$VENV" </dev/null
    fi
fi
log "pip install -r adapters/requirements.txt"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS" </dev/null
printf '%s\n' "$want" >"$STAMP"
log "installed: $("$VENV/bin/python" -m pip freeze --disable-pip-version-check | tr '\n' ' ')"
