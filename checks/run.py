"""`run_check`: what `ctrlaudit check` calls. Exit codes: 0 clean, 1 violations, 2 bad input."""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from checks.catalog import BY_NAME, NAMES
from checks.inputs import BadInput, resolve
from checks.report import Report, build, print_report, write_json, write_junit
from schemas.errors import ContractError
from schemas.verified import ArchiveProblem

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def check(
    inputs: str | Path | Sequence[str | Path],
    engine: str = "duckdb",
    allow: Sequence[str] = (),
    invariants: Sequence[str] | None = None,
    spark: Any = None,
    master: str = "local[2]",
    allow_gaps: bool = False,
    progress: Any = None,
) -> Report:
    """Run the catalog (or the named invariants) over the inputs; raises BadInput/ContractError
    (ArchiveProblem when an archive does not verify and allow_gaps is not given)."""
    started = time.perf_counter()
    unknown = [n for n in list(allow) + list(invariants or ()) if n not in BY_NAME]
    if unknown:
        raise BadInput(f"unknown invariant {', '.join(map(repr, unknown))}; known: {', '.join(NAMES)}")
    names = list(invariants or NAMES)
    resolved = resolve([inputs] if isinstance(inputs, (str, Path)) else list(inputs))
    if engine == "duckdb":
        from checks.duckdb_engine import DuckDBEngine

        eng: Any = DuckDBEngine.from_inputs(resolved, allow_gaps=allow_gaps, progress=progress)
    elif engine == "spark":
        from checks.spark_engine import SparkEngine, build_session

        eng = SparkEngine.from_inputs(spark or build_session(master), resolved, allow_gaps=allow_gaps,
                                      progress=progress)
    else:
        raise BadInput(f"unknown engine {engine!r}; use duckdb or spark")
    try:
        rows = eng.violations(names)
        report = build(eng.name, resolved.describe(), eng.kind_counts(), eng.clusters(), names, rows,
                       list(allow), eng.events_at, gaps=eng.gaps, chains=eng.chains)
    finally:
        eng.close()
    report.seconds = time.perf_counter() - started
    return report


def run_check(
    inputs: str | Path | Sequence[str | Path],
    engine: str = "duckdb",
    allow: Sequence[str] = (),
    json_path: str | Path | None = None,
    junit_path: str | Path | None = None,
    *,
    invariants: Sequence[str] | None = None,
    console: Any = None,
    spark: Any = None,
    master: str = "local[2]",
    allow_gaps: bool = False,
    progress: Any = None,
) -> int:
    """Check, print a readable report, write JSON/JUnit if asked; 0 clean / 1 violations or an archive
    that does not verify / 2 bad input.

    Bad input (missing/empty/corrupt archive, a store of another layout, an unknown name in `allow`)
    prints one line to stderr, never a traceback.
    """
    from rich.console import Console

    console = console or Console(width=None if sys.stdout.isatty() else 120)  # not 80 in CI logs
    try:
        report = check(inputs, engine=engine, allow=allow, invariants=invariants, spark=spark, master=master,
                       allow_gaps=allow_gaps, progress=progress)
    except ArchiveProblem as exc:  # the history is not what it claims: a finding, not a usage error
        print(f"ctrlaudit check: {exc}", file=sys.stderr)
        return EXIT_VIOLATIONS
    except ContractError as exc:
        print(f"ctrlaudit check: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"ctrlaudit check: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except duckdb.Error as exc:  # e.g. a store locked by a load (DuckDB allows one writer process)
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"ctrlaudit check: {text}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ctrlaudit check: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RuntimeError as exc:
        if "interrupted" not in str(exc).lower():  # DuckDB turns Ctrl-C inside a query into this
            raise
        print("ctrlaudit check: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    print_report(report, console)
    for path, write in ((json_path, write_json), (junit_path, write_junit)):
        if not path:
            continue
        try:
            write(report, path)
        except OSError as exc:  # a full disk, a read-only or missing directory: say which file
            print(f"ctrlaudit check: cannot write the report {path}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    return EXIT_CLEAN if report.valid else EXIT_VIOLATIONS
