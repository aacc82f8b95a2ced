#!/usr/bin/env bash
# Every scenario of a directory checked twice, side by side: to a horizon (its own, or
# HORIZON ticks, default 10, for a file that sets none) and without one (for all time, on
# the relative clock). Prints one row per scenario and property: the verdict and shortest
# length each way, and each search's unique states and seconds. A scenario that cannot
# run without a horizon says why.
#
#   bash bench/horizon/compare.sh [DIR] [-- CHECK OPTIONS]   (default scenarios/)
#
# LOCKLAB names the binary (default target/release/locklab, built if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=scenarios
if [[ $# -gt 0 && $1 != -- ]]; then dir=$1; shift; fi
[[ ${1:-} == -- ]] && shift
locklab=${LOCKLAB:-target/release/locklab}
[[ -x $locklab ]] || cargo build --release -p locklab-harness >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bounded" "$work/free" "$work/h"
for f in "$dir"/*.toml; do
    name=$(basename "$f" .toml)
    bounded=$f
    if ! grep -q '^[[:space:]]*horizon[[:space:]]*=' "$f"; then
        bounded=$work/h/$name.toml
        sed "s/^\[timing\][[:space:]]*\$/[timing]\nhorizon = ${HORIZON:-10}/" "$f" > "$bounded"
    fi
    # exit 1 (a verdict other than expected) is an answer here; 2 is an error.
    "$locklab" check "$@" --json "$work/bounded/$name.json" --reports "$work/r" "$bounded" \
        >/dev/null 2>&1 || [[ $? == 1 ]]
    sed '/^[[:space:]]*horizon[[:space:]]*=/d' "$f" > "$work/$name.toml"
    if ! "$locklab" check "$@" --json "$work/free/$name.json" --reports "$work/r" \
        "$work/$name.toml" >/dev/null 2>"$work/free/$name.err"; then
        [[ $? == 1 ]] || rm -f "$work/free/$name.json"
    fi
    echo "checked $name" >&2
done
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
def load(kind, name):
    p = os.path.join(work, kind, name + ".json")
    if not os.path.exists(p):
        return None
    return json.load(open(p))["scenarios"][0]
def cell(p):
    if p["verdict"] == "violated":
        return f"violated ({p['steps']})"
    return p["verdict"]
names = sorted(f[:-5] for f in os.listdir(os.path.join(work, "bounded")))
print("| scenario | property | to its horizon | for all time | states (horizon → none) | seconds (horizon → none) |")
print("|---|---|---|---|---|---|")
tb = tf = 0.0
changed = 0
for n in names:
    b = load("bounded", n)
    f = load("free", n)
    if f is None:
        err = open(os.path.join(work, "free", n + ".err")).read().strip().splitlines()
        why = (err[-1] if err else "refused").replace(work + "/", "")
        print(f"| {n} | all | | needs a horizon: {why.replace('|', '/')} | | |")
        continue
    tb += b["seconds"]; tf += f["seconds"]
    first = True
    for prop, pb in b["properties"].items():
        pf = f["properties"][prop]
        mark = "" if cell(pb) == cell(pf) else " **≠**"
        changed += bool(mark)
        stats = (f"{b['unique_states']:,} → {f['unique_states']:,} | "
                 f"{b['seconds']:.2f} → {f['seconds']:.2f}") if first else " | "
        print(f"| {n} | {prop} | {cell(pb)} | {cell(pf)}{mark} | {stats} |")
        first = False
print()
print(f"{len(names)} scenarios; {changed} verdicts or lengths differ; "
      f"seconds summed over the scenarios that run both ways: {tb:.1f} to their horizons, "
      f"{tf:.1f} without")
PY
