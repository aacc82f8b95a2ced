"""Print the table of reports/libraries.md from the JSON files of adapters/soak-rows.sh.

    python3 adapters/libraries_table.py OUT_DIR

One row per soak: the library and its version, the setting (the scenario), the fault
kind, what the soak found (the first violation of each property and when, or none in
N critical sections), the model's verdicts on the same scenario, whether they agree,
and the command that runs the row again.
"""

import json
import os
import sys

SCENARIOS = [
    "redis-py", "redis-py-wait", "redis-py-blocking", "redis-py-extend",
    "python-redis-lock", "python-redis-lock-wait", "python-redis-lock-auto-renewal",
    "pottery-redlock3", "rslock-redlock3", "pottery-redlock5",
]
FAULTS = ["pauses", "lost_replies", "partitions", "failovers", "restarts", "clock_jumps", "slow_steps"]
SHORT = {"mutual_exclusion": "ME", "owner_only_release": "OOR", "no_orphaned_lock": "NOL", "resource_safety": "RS"}


def row(report):
    soak = report["violations"]
    found = ", ".join(f"{SHORT[v['property']]} at {v['ms'] / 1000:.1f} s" for v in soak)
    sections = report["counts"]["critical_sections"]
    soak_text = found or f"none in {sections} critical sections"
    if found:
        soak_text += f" ({sections} sections)"
    model = report["model"]
    violated = [m for m in model if m["model"].startswith("violated")]
    unproven = [m for m in model if m["model"].startswith("not proven")]
    model_text = ", ".join(f"{SHORT[m['property']]} {m['model'].removeprefix('violated ')}" for m in violated)
    if unproven:
        rest = ", ".join(SHORT[m["property"]] for m in unproven)
        model_text = (model_text + "; " if model_text else "") + f"{rest} not proven (search stopped at the time limit)"
    model_text = model_text or "holds"
    verdicts = {m["agreement"] for m in model if m["agreement"] != "-"}
    if verdicts == {"agree"}:
        agree = "agree"
    elif not verdicts:
        agree = "no proof to compare"
    else:
        agree = "; ".join(
            f"{SHORT[m['property']]}: {m['agreement']}" for m in model if m["agreement"] not in ("agree", "-")
        )
    library = report["adapter"]["library"] if report.get("adapter") else "?"
    command = report["reproduce"].replace(" --clients 2", "")
    return f"| {library} | `{report['scenario']}` | {report['fault']} | {soak_text} | {model_text} | {agree} | `{command}` |"


def main():
    out = sys.argv[1]
    print("| library | setting (scenario) | fault | 60 s soak finds | model says | agree | command |")
    print("|---|---|---|---|---|---|---|")
    for scenario in SCENARIOS:
        for fault in FAULTS:
            path = os.path.join(out, f"{scenario}.{fault}.json")
            if os.path.exists(path):
                with open(path) as f:
                    print(row(json.load(f)))
            elif os.path.exists(os.path.join(out, f"{scenario}.{fault}.txt")):
                with open(os.path.join(out, f"{scenario}.{fault}.txt")) as f:
                    last = f.read().strip().splitlines()[-1:]
                print(f"| ? | `{scenario}` | {fault} | no result: {' '.join(last)} | | | |")


main()
