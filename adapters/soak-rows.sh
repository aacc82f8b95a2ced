#!/usr/bin/env bash
# The soaks of reports/libraries.md: every library setting under each fault kind alone,
# 60 s each (seed 1), with the model's verdict on the same scenario beside it
# (`locklab soak --fault`). About an hour. Figures, not tests.
#
#   bash adapters/soak-rows.sh OUT_DIR [FILTER]
#
# Writes OUT_DIR/<scenario>.<fault>.json (and .svg, .txt: the soak's output) per row;
# FILTER (a substring of "<scenario>.<fault>") runs only the rows that match.
# python3 adapters/libraries_table.py OUT_DIR prints the report's table from them.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: soak-rows.sh OUT_DIR [FILTER]}"
FILTER="${2:-}"
SECONDS_EACH="${LOCKLAB_ROW_SECONDS:-60}"
mkdir -p "$OUT"
bash adapters/install.sh
# Built one at a time: together they would unify redis-rs features (rslock asks for
# rustls) and rebuild everything the harness depends on.
cargo build --release -p locklab-harness
cargo build --release -p locklab-adapter-rslock
PY=adapters/.venv/bin/python
SINGLE="pauses lost_replies partitions failovers restarts clock_jumps slow_steps"
MULTI="pauses lost_replies partitions restarts clock_jumps slow_steps"
rows() { # rows SCENARIO CLIENT FAULTS...
    local scenario="$1" client="$2"
    shift 2
    for fault in "$@"; do
        local name
        name="$(basename "$scenario" .toml).$fault"
        case "$name" in *"$FILTER"*) ;; *) continue ;; esac
        echo "== $name"
        target/release/locklab soak "$scenario" --client "$client" --fault "$fault" \
            --seconds "$SECONDS_EACH" --seed 1 --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 \
            || echo "   exit $? (see $OUT/$name.txt)"
        tail -n 1 "$OUT/$name.txt"
    done
}
rows adapters/redis-py/redis-py.toml "$PY adapters/redis-py/adapter.py" $SINGLE
rows adapters/redis-py/redis-py-wait.toml "$PY adapters/redis-py/adapter.py" failovers
rows adapters/redis-py/redis-py-blocking.toml "$PY adapters/redis-py/adapter.py --blocking" $SINGLE
rows adapters/redis-py/redis-py-extend.toml "$PY adapters/redis-py/adapter.py --extend" $SINGLE
rows adapters/python-redis-lock/python-redis-lock.toml "$PY adapters/python-redis-lock/adapter.py" $SINGLE
rows adapters/python-redis-lock/python-redis-lock-wait.toml "$PY adapters/python-redis-lock/adapter.py" failovers
rows adapters/python-redis-lock/python-redis-lock-auto-renewal.toml "$PY adapters/python-redis-lock/adapter.py --auto-renewal" $SINGLE
rows adapters/pottery/pottery-redlock3.toml "$PY adapters/pottery/adapter.py" $MULTI
rows adapters/rslock/rslock-redlock3.toml target/release/rslock-adapter $MULTI
rows adapters/pottery/pottery-redlock5.toml "$PY adapters/pottery/adapter.py" $MULTI
