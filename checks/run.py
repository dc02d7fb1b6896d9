"""`run_check`: what `ctrlaudit check` calls. Exit codes: 0 clean, 1 violations, 2 bad input."""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


from checks.catalog import BY_NAME, NAMES
from checks.inputs import BadInput, resolve
from checks.report import Report, build, print_report, write_csv, write_json, write_junit

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


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
    csv_path: str | Path | None = None,
    memory_limit: str | None = None,
) -> Report:
    """Run the catalog (or the named invariants) over the inputs; raises BadInput/ContractError
    (ArchiveProblem when an archive does not verify and allow_gaps is not given). `csv_path`: every
    finding as CSV, written from the engine's findings table before it closes. `memory_limit`: DuckDB's
    (it spills beyond it); Spark's memory is Spark's configuration."""
    started = time.perf_counter()
    unknown = [n for n in list(allow) + list(invariants or ()) if n not in BY_NAME]
    if unknown:
        raise BadInput(f"unknown invariant {', '.join(map(repr, unknown))}; known: {', '.join(NAMES)}")
    names = list(invariants or NAMES)
    if engine != "spark":  # file:// is a local path to DuckDB; other URIs only Spark reads (checks.hadoop)
        inputs = [p[len("file://"):] if isinstance(p, str) and p.startswith("file://") else p
                  for p in ([inputs] if isinstance(inputs, (str, Path)) else inputs)]
    resolved = resolve([inputs] if isinstance(inputs, (str, Path)) else list(inputs))
    if memory_limit and engine != "duckdb":
        raise BadInput("--memory-limit is DuckDB's; give Spark its memory with spark.driver.memory / "
                       "spark.executor.memory")
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
        if memory_limit:
            eng.limit_memory(memory_limit)
        found = eng.findings(names)
        try:
            kinds = eng.kind_counts()
            report = build(eng.name, resolved.describe(), kinds, eng.clusters(), names, found,
                           list(allow), eng.events_at, gaps=eng.gaps, chains=eng.chains,
                           stretches=eng.capture_stretches() if kinds.get("CaptureGap") else (),
                           first_changes=eng.first_changes)
            eng.confirm_sources()  # every read is done: were the bytes read the bytes verified?
            if csv_path:
                try:
                    write_csv(found, csv_path)
                except BrokenPipeError:  # --csv -: the reader went away; the caller still writes its files
                    report.seconds = time.perf_counter() - started
                    raise ReaderGone(report) from None
                except OSError as exc:  # a full disk, a read-only or missing directory: say which file
                    raise BadInput(f"cannot write the report {csv_path}: {exc.strerror or exc}") from None
        finally:
            found.close()
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
    csv_path: str | Path | None = None,
    invariants: Sequence[str] | None = None,
    console: Any = None,
    spark: Any = None,
    master: str = "local[2]",
    allow_gaps: bool = False,
    progress: Any = None,
    memory_limit: str | None = None,
) -> int:
    """Check, print a readable report, write JSON/JUnit if asked; 0 clean / 1 violations or an archive
    that does not verify / 2 bad input.

    Bad input (missing/empty/corrupt archive, a store of another layout, an unknown name in `allow`)
    prints one line to stderr, never a traceback.
    """
    from rich.console import Console

    # with the JSON on standard output (--json -), the readable report goes to standard error
    to_stderr = any(p is not None and str(p) == "-" for p in (json_path, csv_path, junit_path))
    console = console or Console(stderr=to_stderr,
                                 width=None if (sys.stderr if to_stderr else sys.stdout).isatty() else 120)
    from ctrlaudit.errors import PREFIX, describe, one_line

    try:
        report = check(inputs, engine=engine, allow=allow, invariants=invariants, spark=spark, master=master,
                       allow_gaps=allow_gaps, progress=progress, csv_path=csv_path,
                       memory_limit=memory_limit)
        reader_gone: BrokenPipeError | None = None
    except ReaderGone as exc:  # --csv -: the reader of standard output went away; the files are still written
        report, reader_gone = exc.report, exc
    except BaseException as exc:  # noqa: BLE001 - the CLI's one mapping of errors to a line and an exit code
        known = describe(exc)
        if known is None:
            raise
        print(PREFIX + one_line(known[0]), file=sys.stderr)
        return known[1]
    if reader_gone is None:
        try:
            print_report(report, console)
        except BrokenPipeError as exc:  # `check --junit r.xml | head`: the files are still written, then exit 141
            reader_gone = exc
    # files before standard output ('-'): a reader of standard output that went away costs no file
    outputs = sorted(((p, w) for p, w in ((json_path, write_json), (junit_path, write_junit)) if p),
                     key=lambda pw: str(pw[0]) == "-")
    for path, write in outputs:
        if reader_gone is not None and str(path) == "-":
            break
        try:
            write(report, path)
        except BrokenPipeError:
            raise
        except OSError as exc:  # a full disk, a read-only or missing directory: say which file
            print(f"{PREFIX}cannot write the report {path}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if reader_gone is not None:
        raise reader_gone
    return EXIT_CLEAN if report.valid else EXIT_VIOLATIONS
