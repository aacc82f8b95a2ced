#!/usr/bin/env bash
# Instructions per acquire+release cycle of benchmark contenders, counted by callgrind
# against a throw-away redis-server on 127.0.0.1 (Debian's, as the local image uses).
# Each contender runs twice, with SHORT and LONG cycles per task; the difference of the
# two totals over the difference of cycles leaves out start-up and connecting.
#
#   bash bench/instructions.sh [TASKS] [LABEL...]     e.g. bash bench/instructions.sh 16 raw/1 lua-release/1
set -euo pipefail
cd "$(dirname "$0")/.."
tasks=${1:-1}
shift || true
labels=("$@")
[ ${#labels[@]} -gt 0 ] || labels=(raw/1 lua-release/1 watchdog/1 "raw reentrant/1" reentrant/1 rslock/1)
short=${SHORT:-50}
long=${LONG:-250}
port=${PORT:-6399}
for tool in valgrind redis-server redis-cli; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found" >&2; exit 2; }
done
cargo build --release -q -p locklab-bench --example instructions
bin="${CARGO_TARGET_DIR:-target}/release/examples/instructions"
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
total() {
  valgrind --tool=callgrind --callgrind-out-file="$dir/out" "$bin" \
    "redis://127.0.0.1:$port" "$1" "$tasks" "$2" >/dev/null 2>"$dir/valgrind.log"
  awk '/^(summary|totals):/ { print $2; exit }' "$dir/out"
}
printf '| contender | tasks | instructions per cycle |\n|---|---:|---:|\n'
for label in "${labels[@]}"; do
  a=$(total "$label" "$short")
  b=$(total "$label" "$long")
  printf '| %s | %s | %s |\n' "$label" "$tasks" $(( (b - a) / ((long - short) * tasks) ))
done
