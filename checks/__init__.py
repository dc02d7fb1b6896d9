"""Invariant checks over whole histories: one catalog (checks.catalog, checks/invariants/), two engines
(checks.duckdb_engine, checks.spark_engine), Jepsen-style reports (checks.report).

The CLI calls `run_check(inputs, engine="duckdb"|"spark", allow=[...], json_path=None, junit_path=None)`.
"""
from __future__ import annotations

from typing import Any


def run_check(*args: Any, **kwargs: Any) -> int:
    from checks.run import run_check as _run_check  # keeps `import checks` free of duckdb/pyspark

    return _run_check(*args, **kwargs)


__all__ = ["run_check"]
