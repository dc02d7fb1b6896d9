"""Would fusing invariants into one pass help Spark? (not a test; the target: Spark ≥ 100k events/s on local[2])

Five row-local rules, written as the catalog writes them (leader_in_isr's three, partition_epoch_monotonic's,
leader_epoch_monotonic's first two), run as three queries as the engine does, then as one query that scans the
events once and emits every rule a row breaks. Same rows expected; prints the seconds of each, three rounds
(the first pays Spark's code generation).

    .venv/bin/python bench/spark_fusion.py STORE

The store's events are written once to Parquet (not timed) and read by every query.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.append(str(Path(__file__).resolve().parent))  # after the repo: bench/checks.py is not the package

from checks.spark_engine import build_session  # noqa: E402
from spark_invariants import store_as_parquet  # noqa: E402

PC = "kind = 'PartitionChange'"
TRANSITION = "NOT bootstrap AND has_before AND has_after"
RULES = (  # (rule, condition over one PartitionChange row)
    ("leader_not_in_isr", "has_after AND a_leader <> -1 AND NOT array_contains(a_isr, a_leader)"),
    ("leader_not_in_replicas", "has_after AND a_leader <> -1 AND NOT array_contains(a_replicas, a_leader)"),
    ("isr_not_subset_of_replicas", "has_after AND size(array_except(a_isr, a_replicas)) > 0"),
    ("partition_epoch_not_increased", f"{TRANSITION} AND NOT array_contains(changes, 'CREATE') "
                                      "AND a_partition_epoch <= b_partition_epoch"),
    ("leader_epoch_not_bumped", f"{TRANSITION} AND (a_leader_epoch < b_leader_epoch "
                                "OR (a_leader_epoch = b_leader_epoch AND a_leader <> b_leader))"),
)
APART = (  # as the catalog groups them: one query per invariant
    " UNION ALL ".join(f"SELECT cluster_id, seq, '{r}' AS rule FROM events WHERE {PC} AND {c}" for r, c in RULES[:3]),
    f"SELECT cluster_id, seq, '{RULES[3][0]}' AS rule FROM events WHERE {PC} AND {RULES[3][1]}",
    f"SELECT cluster_id, seq, '{RULES[4][0]}' AS rule FROM events WHERE {PC} AND {RULES[4][1]}",
)
FUSED = ("SELECT cluster_id, seq, rule FROM (SELECT cluster_id, seq, explode(array_compact(array("
         + ", ".join(f"IF({c}, '{r}', NULL)" for r, c in RULES) + f"))) AS rule FROM events WHERE {PC}) x")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-fusion-") as tmp:
        parquet, events = store_as_parquet(Path(sys.argv[1]), Path(tmp))
        spark = build_session("local[2]", shuffle_partitions=8)
        spark.read.parquet(str(parquet)).createOrReplaceTempView("events")
        print(f"{events:,} events")
        for _ in range(3):
            t = time.perf_counter()
            apart = sorted(tuple(r) for q in APART for r in spark.sql(q).collect())
            a = time.perf_counter() - t
            t = time.perf_counter()
            fused = sorted(tuple(r) for r in spark.sql(FUSED).collect())
            f = time.perf_counter() - t
            assert apart == fused, "the fused query's rows differ"
            print(f"three queries {a:.2f} s, one fused {f:.2f} s ({len(fused)} rows)", flush=True)
        spark.stop()


if __name__ == "__main__":
    main()
