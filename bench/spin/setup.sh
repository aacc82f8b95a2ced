#!/usr/bin/env bash
# Installs what bench/spin/run.sh needs: SPIN (Debian's package), a C compiler for the
# verifiers SPIN writes, GNU time for the figures, python3 for the tables.
set -euo pipefail
missing=()
command -v spin > /dev/null || missing+=(spin)
command -v gcc > /dev/null || missing+=(gcc)
[ -x /usr/bin/time ] || missing+=(time)
command -v python3 > /dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[spin/setup.sh] apt-get install ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi
spin -V
