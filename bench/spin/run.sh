#!/usr/bin/env bash
# Side-by-side run of SPIN and locklab on lua-release-pause, today's model (two legs per
# command). Sequential runs, REPS (default 3) of each configuration.
#
#   usage: [REPS=3] [W=dir] [ONLY="..."] run.sh LOCKLAB [SIZES]     SIZES default "2 3"
#   e.g.   bash bench/spin/setup.sh; bash bench/spin/run.sh target/release/locklab "2 3"
#          ONLY="ll-default ll-nosym spin-v2-red" ./run.sh LOCKLAB 4   (4 clients: no plain runs)
#
# Needs spin, gcc, python3 on PATH and GNU time at /usr/bin/time. Works in $W (default
# ./work next to this script); the 2/3/4-client scenario files are derived from
# lua-release-pause.toml next to this script (the scenario the mirrors follow, with ttl = 4;
# scenarios/lua-release-pause.toml has ttl = 5, so that its pause is needed).
# ONLY (space separated, default all):
#   ll-plain    locklab check --plain            (no reduction; = SPIN v2)
#   ll-nosym    locklab check --no-symmetry      (= SPIN v2red)
#   ll-default  locklab check                    (all reductions)
#   spin-old    an older mirror in $OLD (one-leg replies), DFS -DNOREDUCE; not in the default set
#   spin-v2     lua_release_pause*_v2.pml: DFS -DNOREDUCE, DFS POR, BFS POR, BFS -DNOREDUCE
#   spin-v2-red the same built with spin -DREDUCED: DFS and BFS, -DNOREDUCE
#   spin-cex    v2 with -DONLY_MUTEX, BFS, stop at the first violation
# Output columns: tool config states generated min_s med_s cpu_s peak_MB cex st/s gen/s
#   seconds: wall clock per process, end to end (locklab: parse, search, traces, JSON;
#   SPIN: ./pan only; `spin -a` + gcc, about 1.1 s, not counted); cpu_s: median
#   user+sys (the machine may be shared); st/s and gen/s from the median wall time.
#   SPIN "generated" = transitions - 1 (SPIN counts the initial state as a transition
#   target, locklab counts successors only). cex: steps of the first mutual_exclusion
#   counterexample reported (locklab and SPIN BFS: shortest; SPIN DFS: first hit).
set -euo pipefail
[ $# -ge 1 ] && [ -x "$1" ] || { echo "usage: $0 LOCKLAB [SIZES]" >&2; exit 2; }
LOCKLAB=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SIZES=${2:-"2 3"}
HERE=$(cd "$(dirname "$0")" && pwd)
REPS=${REPS:-3}
ONLY=${ONLY:-"ll-plain ll-nosym ll-default spin-v2 spin-v2-red spin-cex"}
W=${W:-$HERE/work}
OLD=${OLD:-}
mkdir -p "$W"; cd "$W"
want() { [[ " $ONLY " == *" $1 "* ]]; }

for n in 2 3 4; do
  sed -e "s/^count = 2\$/count = $n/" -e "s/^name = \"lua-release-pause\"/name = \"lua-release-pause-${n}c\"/" \
    "$HERE/lua-release-pause.toml" > "lua-release-pause-${n}c.toml"
  grep -q "^count = $n\$" "lua-release-pause-${n}c.toml" || { echo "cannot derive the $n-client scenario" >&2; exit 2; }
done

timed() {  # timed REP LABEL CMD...: GNU time to time.LABEL.REP, output to out.LABEL.REP
  local rep=$1 label=$2; shift 2
  /usr/bin/time -f "%e %M %U %S" -o "time.$label.$rep" "$@" > "out.$label.$rep" 2>&1 || true
}
stats() {  # "min median peakMB medianCPU" over the REPS runs (CPU = user + sys)
  cat time."$1".* | python3 -c '
import sys, statistics
rows = [l.split() for l in sys.stdin if l.strip() and l.split()[0][0].isdigit()]
secs = sorted(float(r[0]) for r in rows)
cpu = statistics.median(float(r[2]) + float(r[3]) for r in rows)
print("%.2f %.2f %.0f %.2f" % (secs[0], statistics.median(secs), max(int(r[1]) for r in rows) / 1024, cpu))'
}
rate() { python3 -c "import sys; n,s=float(sys.argv[1]),float(sys.argv[2]); print('%.0fk' % (n/s/1e3) if s>0 else '-')" "$1" "$2"; }
row() { printf '%-8s %-34s %11s %11s %7s %7s %7s %7s %4s %7s %7s\n' "$@"; }

row tool config states generated min_s med_s cpu_s peak_MB cex st/s gen/s
for size in $SIZES; do
  scen=lua-release-pause-${size}c.toml
  case $size in 2) w=20; wred=18;; 3) w=24; wred=21;; 4) w=27; wred=24;; esac
  # ---- locklab
  for cfg in "plain:--plain" "nosym:--no-symmetry" "default:"; do
    name=${cfg%%:*}; flags=${cfg#*:}
    want "ll-$name" || continue
    [ "$name" = plain ] && [ "$size" = 4 ] && continue   # 4 clients plain: too big here
    for t in 1 2; do
      label="ll$size-$name-t$t"
      for r in $(seq "$REPS"); do
        # shellcheck disable=SC2086
        timed "$r" "$label" "$LOCKLAB" check "$scen" $flags --threads "$t" \
          --json "$label.$r.json" --reports "$W/r"
      done
      read -r st gen cex < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["scenarios"][0]
print(s["unique_states"], s["states"], s["properties"]["mutual_exclusion"]["steps"])' "$label.1.json")
      read -r mn md mb cpu < <(stats "$label")
      row locklab "${size}c $name threads=$t" "$st" "$gen" "$mn" "$md" "$cpu" "$mb" "$cex" "$(rate "$st" "$md")" "$(rate "$gen" "$md")"
    done
  done
  # ---- SPIN
  spin_rows() {  # spin_rows TAG PML DEFS WEXP VARIANTS...
    local tag=$1 pml=$2 defs=$3 w=$4; shift 4
    mkdir -p "gen-$tag-$size"
    # shellcheck disable=SC2086
    ( cd "gen-$tag-$size" && spin -o2 -a $defs "$pml" > /dev/null )
    for v in "$@"; do
      local vn=${v%%:*} fl=${v#*:}
      # shellcheck disable=SC2086
      ( cd "gen-$tag-$size" && gcc -O2 -DSAFETY $fl -o "pan-$vn" pan.c 2>/dev/null )
      local label="spin$size-$tag-$vn"
      for r in $(seq "$REPS"); do timed "$r" "$label" "./gen-$tag-$size/pan-$vn" -c0 -w$w; done
      local st tr cex
      st=$(awk '/states, stored/ {print $1; exit}' "out.$label.1")
      tr=$(awk '/transitions \(= stored/ {print $1; exit}' "out.$label.1")
      cex=$( (grep -m1 'assertion violated.*<=1) (at depth' "out.$label.1" || true) | sed -n 's/.*at depth \([0-9]*\).*/\1/p')
      read -r mn md mb cpu < <(stats "$label")
      row spin "${size}c $tag $vn -w$w" "$st" "$((tr - 1))" "$mn" "$md" "$cpu" "$mb" "$( [ -n "$cex" ] && echo $((cex + 1)) || echo -)" "$(rate "$st" "$md")" "$(rate "$tr" "$md")"
    done
  }
  if want spin-old && [ "$size" != 4 ]; then
    # the 2026-11-22 mirror (one-leg replies) as it was benchmarked then
    oldpml=$OLD/lua_release_pause.pml; [ "$size" = 3 ] && oldpml=$OLD/lua_release_pause_3c.pml
    spin_rows old "$oldpml" "" "$((w == 24 ? 23 : w))" "dfs-noreduce:-DNOREDUCE"
  fi
  pml=$HERE/lua_release_pause_v2.pml; [ "$size" = 3 ] && pml=$HERE/lua_release_pause_3c_v2.pml
  [ "$size" = 4 ] && pml=$HERE/lua_release_pause_4c_v2.pml
  if want spin-v2 && [ "$size" != 4 ]; then
    spin_rows v2 "$pml" "" "$w" "dfs-noreduce:-DNOREDUCE" "dfs-por:" "bfs-por:-DBFS" "bfs-noreduce:-DBFS -DNOREDUCE"
  fi
  if want spin-v2-red; then
    # locklab's exact reductions but symmetry, written into the Promela (= --no-symmetry)
    spin_rows v2red "$pml" "-DREDUCED" "$wred" "dfs-noreduce:-DNOREDUCE" "bfs-noreduce:-DBFS -DNOREDUCE"
  fi
  if want spin-cex && [ "$size" != 4 ]; then
    # shortest mutual_exclusion counterexample: BFS, stop at the first violation
    mkdir -p "cex-$size"
    ( cd "cex-$size" && spin -o2 -a -DONLY_MUTEX "$pml" > /dev/null && gcc -O2 -DSAFETY -DBFS -o pan pan.c 2>/dev/null )
    label="spin$size-bfs-first"
    for r in $(seq "$REPS"); do
      ( cd "cex-$size" && /usr/bin/time -f "%e %M %U %S" -o "../time.$label.$r" ./pan -w$w > "../out.$label.$r" 2>&1 || true )
    done
    st=$(awk '/states, stored/ {print $1; exit}' "out.$label.1")
    cex=$( (grep -m1 'assertion violated' "out.$label.1" || true) | sed -n 's/.*at depth \([0-9]*\).*/\1/p')
    read -r mn md mb cpu < <(stats "$label")
    row spin "${size}c v2 bfs ONLY_MUTEX, stop at 1st" "$st" - "$mn" "$md" "$cpu" "$mb" "$( [ -n "$cex" ] && echo $((cex + 1)) || echo -)" - -
  fi
done
