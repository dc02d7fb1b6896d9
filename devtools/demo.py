"""`make demo`: the whole loop on the embedded default, through the real CLI.

simulate a controller history -> load it into DuckDB -> state as of a point, a diff, one
partition's timeline, one explained change -> the invariant check. Everything lands in demo-out/.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

OUT = Path("demo-out")
CLI = [sys.executable, "-m", "ctrlaudit"]


def step(title: str, *args: str, check: bool = True) -> str:
    print(f"\n\033[1m$ ctrlaudit {' '.join(args)}\033[0m   # {title}", flush=True)
    done = subprocess.run([*CLI, *args], text=True, capture_output=True)
    print(done.stdout, end="")
    if done.stderr:
        print(done.stderr, end="", file=sys.stderr)
    if check and done.returncode != 0:
        raise SystemExit(f"demo step failed with exit code {done.returncode}")
    return done.stdout


def _first_topic(store: str) -> str:
    """The first topic alive at the end of the history (the simulator creates and deletes topics)."""
    done = subprocess.run([*CLI, "state", "--store", store, "--format", "json"], text=True, capture_output=True,
                          check=True)
    return json.loads(done.stdout)["partitions"][0]["topic"]


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    store = str(OUT / "demo.duckdb")
    archive = str(OUT / "archive")
    step("a deterministic history: 6 brokers on 3 racks, failures, reassignments, a failover",
         "simulate", "--out", archive, "--seed", "7", "--brokers", "6", "--racks", "3",
         "--topics", "4", "--partitions", "6", "--events", "5000")
    step("load the archive into the embedded store", "load", archive, "--store", store)
    summary = json.loads(step("where the history ends (JSON; the describe layout follows)", "state", "--store", store,
                              "--format", "json", "--partition", "0", "--topic",
                              _first_topic(store)))
    last = summary["as_of"]["source_offset"]
    mid = last // 2
    topic = summary["partitions"][0]["topic"]
    step("the controller's view half-way, as kafka-topics --describe prints it",
         "state", "--store", store, "--offset", str(mid), "--topic", topic)
    step("under-replicated partitions at the end", "state", "--store", store, "--under-replicated")
    step("what changed in the second half", "diff", "--store", store, "--from-offset", str(mid),
         "--to-offset", str(last), "--topic", topic)
    step("one partition's history (newest 12 changes)", "timeline", "--store", store, "--topic", topic,
         "--partition", "0", "--limit", "12")
    step(f"why the leader of {topic}-0 last moved", "explain", "--store", store, "--topic", topic,
         "--partition", "0", "--last-leader-change")
    step("invariants over the whole history", "check", store, "--json", str(OUT / "check.json"), check=False)
    report = OUT / "incident.html"
    step("the incident report: summary, plots, drill-down per partition (one HTML file, no network needed)",
         "report", "--store", store, "--check-json", str(OUT / "check.json"), "--out", str(report))
    print(f"\nThe incident report: {report.resolve()}")
    print(f"\nEverything is in {OUT}/ (archive files, manifests, the DuckDB store).")


if __name__ == "__main__":
    main()
