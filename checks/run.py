"""`check`: run the catalog over the inputs and condense the findings into a Report (the CLI's `ctrlaudit
check` prints it and maps it to an exit code: ctrlaudit.check_run)."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from checks.catalog import BY_NAME, NAMES, Deadlines
from checks.duckdb_engine import DuckDBEngine
from checks.findings import Findings
from checks.inputs import BadInput, resolve
from checks.report import FAIL_ON, Report, build
from checks.spark_engine import SparkEngine, build_session
from schemas.archive.signatures import Trust


class ReaderGone(BrokenPipeError):
    """The reader of standard output went away while the CSV went there (--csv -): the report, for the
    files still to be written."""

    def __init__(self, report: Report) -> None:
        super().__init__(32, "the reader of standard output went away")
        self.report = report


def check(
    inputs: str | Path | Sequence[str | Path],
    engine: str = "duckdb",
    allow: Sequence[str] = (),
    invariants: Sequence[str] | None = None,
    spark: Any = None,
    master: str = "local[2]",
    allow_gaps: bool = False,
    progress: Any = None,
    write_findings: Callable[[Findings], None] | None = None,
    memory_limit: str | None = None,
    trust: Trust | None = None,
    deadlines: Deadlines = (),
    fail_on: str = "error",
) -> Report:
    """Run the catalog (or the named invariants) over the inputs; raises BadInput/ContractError
    (ArchiveProblem when an archive does not verify and allow_gaps is not given). `write_findings`: given the
    judged findings before the engine's table closes (the CLI writes them as CSV). `memory_limit`: DuckDB's
    (it spills beyond it); Spark's memory is Spark's configuration. `deadlines`: the bounded-liveness checks'
    deadlines given (checks.deadlines.parse); `fail_on`: "error", or "warning" to make their findings fail the
    report too."""
    started = time.perf_counter()
    unknown = [n for n in list(allow) + list(invariants or ()) if n not in BY_NAME]
    if unknown:
        raise BadInput(f"unknown invariant {', '.join(map(repr, unknown))}; known: {', '.join(NAMES)}")
    names = list(invariants or NAMES)
    if engine != "spark":  # file:// is a local path to DuckDB; other URIs only Spark reads (checks.hadoop)
        inputs = [p[len("file://"):] if isinstance(p, str) and p.startswith("file://") else p
                  for p in ([inputs] if isinstance(inputs, (str, Path)) else inputs)]
    resolved = resolve([inputs] if isinstance(inputs, (str, Path)) else list(inputs))
    if fail_on not in FAIL_ON:
        raise BadInput(f"unknown --fail-on {fail_on!r}; use {' or '.join(FAIL_ON)}")
    if memory_limit and engine != "duckdb":
        raise BadInput("--memory-limit is DuckDB's; give Spark its memory with spark.driver.memory / "
                       "spark.executor.memory")
    if engine == "duckdb":
        eng: Any = DuckDBEngine.from_inputs(resolved, allow_gaps=allow_gaps, progress=progress, trust=trust)
    elif engine == "spark":
        eng = SparkEngine.from_inputs(spark or build_session(master), resolved, allow_gaps=allow_gaps,
                                      progress=progress, trust=trust)
    else:
        raise BadInput(f"unknown engine {engine!r}; use duckdb or spark")
    eng.deadlines = deadlines
    try:
        if memory_limit:
            eng.limit_memory(memory_limit)
        found = eng.findings(names)
        try:
            kinds = eng.kind_counts()
            report = build(eng.name, resolved.describe(), kinds, eng.clusters(), names, found,
                           list(allow), eng.events_at, gaps=eng.gaps, chains=eng.chains,
                           stretches=eng.capture_stretches() if kinds.get("CaptureGap") else (),
                           first_changes=eng.first_changes, deadlines=deadlines, fail_on=fail_on)
            eng.confirm_sources()  # every read is done: were the bytes read the bytes verified?
            if write_findings is not None:
                try:
                    write_findings(found)
                except BrokenPipeError:  # the findings went to a reader that went away; the caller still writes
                    report.seconds = time.perf_counter() - started
                    raise ReaderGone(report) from None
        finally:
            found.close()
    finally:
        eng.close()
    report.seconds = time.perf_counter() - started
    return report
