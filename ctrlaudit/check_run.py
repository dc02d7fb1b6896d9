"""`ctrlaudit check` and the Spark job's common part: run the check (checks.run), print its report, write the
report files, and map the outcome to the exit code (ctrlaudit.errors: 0 clean, 1 violations or an archive that
does not verify, 2 bad input, 141 when the reader of standard output went away)."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from checks.catalog import Deadlines
from checks.findings import Findings
from checks.inputs import BadInput
from checks.report import Report, junit_xml, print_report
from checks.run import ReaderGone, check
from ctrlaudit.commands.output import copy_to_stdout, into_place, is_stdout, write_text
from schemas.archive.signatures import Trust
from ctrlaudit.errors import EXIT_BAD_INPUT, EXIT_FOUND, EXIT_OK, PREFIX, describe, one_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession  # extra: spark


def run_check(
    inputs: str | Path | Sequence[str | Path],
    engine: str = "duckdb",
    allow: Sequence[str] = (),
    json_path: str | Path | None = None,
    junit_path: str | Path | None = None,
    *,
    csv_path: str | Path | None = None,
    invariants: Sequence[str] | None = None,
    console: Console | None = None,
    spark: SparkSession | None = None,
    master: str = "local[2]",
    allow_gaps: bool = False,
    progress: Callable[[int], None] | None = None,
    memory_limit: str | None = None,
    trust: Trust | None = None,
    deadlines: Deadlines = (),
    fail_on: str = "error",
) -> int:
    """Check, print a readable report, write JSON/JUnit/CSV if asked; the exit code.

    Bad input (missing/empty/corrupt archive, a store of another layout, an unknown name in `allow`)
    prints one line to stderr, never a traceback.
    """
    # with the JSON on standard output (--json -), the readable report goes to standard error
    to_stderr = any(p is not None and str(p) == "-" for p in (json_path, csv_path, junit_path))
    console = console or Console(stderr=to_stderr,
                                 width=None if (sys.stderr if to_stderr else sys.stdout).isatty() else 120)

    findings_csv = None
    if csv_path is not None:
        target = csv_path

        def findings_csv(found: Findings) -> None:
            try:
                write_csv(found, target)
            except BrokenPipeError:
                raise
            except OSError as exc:  # a full disk, a read-only or missing directory: say which file
                raise BadInput(f"cannot write the report {target}: {exc.strerror or exc}") from None

    try:
        report = check(inputs, engine=engine, allow=allow, invariants=invariants, spark=spark, master=master,
                       allow_gaps=allow_gaps, progress=progress, memory_limit=memory_limit,
                       write_findings=findings_csv, trust=trust, deadlines=deadlines, fail_on=fail_on)
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
    return EXIT_OK if report.valid else EXIT_FOUND


def write_json(report: Report, path: str | Path) -> None:
    """To the file (written beside it and renamed into place), or to standard output for '-'. Whether the
    file may be written is the command's to decide first (ctrlaudit.commands.output.refuse_outputs)."""
    write_text(path, json.dumps(report.to_json(), indent=2, sort_keys=False, default=str) + "\n")


def write_csv(found: Findings, path: str | Path) -> None:
    """One row per judged finding (violated or allowed) with the columns every engine returns, written by
    DuckDB from the findings table; '-' = standard output. A clean history gives the header alone.

    The file is written beside its path and renamed into place: a failed write leaves no half report. A
    link, a FIFO or a device is refused by the command before it runs (ctrlaudit.commands.output)."""
    if not is_stdout(path):
        with into_place(path) as part:
            found.write_csv(str(part))
        return
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-csv-") as tmp:
        written = os.path.join(tmp, "findings.csv")
        found.write_csv(written)
        copy_to_stdout(written)  # sys.stdout may not be file descriptor 1 (DuckDB writes to paths only)


def write_junit(report: Report, path: str | Path) -> None:
    """To the file, or to standard output for '-'."""
    if str(path) == "-":
        sys.stdout.flush()
        junit_xml(report).write(sys.stdout.buffer, encoding="utf-8", xml_declaration=True)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
    else:
        with into_place(path) as part:
            junit_xml(report).write(part, encoding="utf-8", xml_declaration=True)
