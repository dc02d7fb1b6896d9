"""`ctrlaudit check`: the invariant catalog over a history; exit 1 on any violation."""
from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from checks.deadlines import parse as parse_deadlines
from checks.inputs import BadInput
from checks.report import FAIL_ON as FAIL_ON_CHOICES
from ctrlaudit.check_run import run_check
from ctrlaudit.commands.output import (FORCE, JSON_OUT, TIME_FORMAT, TimeFormat, check_inputs, refuse_outputs,
                                       use_time_format)
from ctrlaudit.commands.keys import trust_of
from ctrlaudit.commands.options import DEADLINE, FAIL_ON, TRUSTED_KEY, WITNESS_KEY
from ctrlaudit.errors import user_errors
from ctrlaudit.progress import archive_bytes, bar


class Engine(str, Enum):
    duckdb = "duckdb"
    spark = "spark"


def register(app: typer.Typer) -> None:
    @app.command("check")
    @user_errors
    def check(
        # strings, not Paths: a Path folds the "//" of hdfs://host/… into "/"
        inputs: list[str] = typer.Argument(..., help="Archive files/directories, or a store (.duckdb); with "
                                                     "--engine spark also Hadoop URIs (hdfs://, s3a://, file://)."),
        engine: Engine = typer.Option(Engine.duckdb, "--engine", help="duckdb (embedded) or spark."),
        master: str = typer.Option("local[2]", "--master", help="Spark master, with --engine spark."),
        json_path: Path | None = JSON_OUT,
        junit_path: Path | None = typer.Option(None, "--junit", help="Write the report as JUnit XML ('-' = standard "
                                                                     "output)."),
        csv_path: Path | None = typer.Option(None, "--csv", help="Write every finding (violated and allowed) as CSV, "
                                                                 "one row each; '-' = standard output."),
        allow: list[str] = typer.Option([], "--allow", help="Invariant whose breaches are allowed (repeatable)."),
        invariant: list[str] = typer.Option([], "--invariant", help="Only these invariants (repeatable)."),
        allow_gaps: bool = typer.Option(False, "--allow-gaps",
                                        help="Check around missing or damaged archive files: findings resting on "
                                             "such a stretch are reported as no data, never as violations."),
        memory_limit: str | None = typer.Option(None, "--memory-limit",
                                                help="Cap DuckDB's memory (e.g. 6GB); beyond it the queries spill to "
                                                     "disk. Default: DuckDB's, 80% of the machine's memory."),
        deadline: list[str] = DEADLINE, fail_on: str = FAIL_ON,
        trusted_key: list[str] = TRUSTED_KEY, witness_key: list[str] = WITNESS_KEY,
        time_format: TimeFormat | None = TIME_FORMAT, force: bool = FORCE,
    ) -> None:
        """Check every invariant of the catalog. Exit 0 clean, 1 violations, 2 bad input.

        The bounded-liveness checks (severity warning) report obligations met later than their deadline
        (--deadline) without changing the exit code, unless --fail-on warning.

        With --trusted-key the archive's signed checkpoints are checked as it is read (as `verify --trusted-key`
        does); an archive that fails them is refused (exit 1)."""
        use_time_format(time_format)
        deadlines = parse_deadlines(deadline)
        if fail_on not in FAIL_ON_CHOICES:
            raise BadInput(f"--fail-on {fail_on!r}: one of {', '.join(FAIL_ON_CHOICES)}")
        trust = trust_of(trusted_key, witness_key)
        refuse_outputs({"--json": json_path, "--junit": junit_path, "--csv": csv_path}, force=force,
                       inputs=check_inputs(inputs))

        with bar("reading and verifying", archive_bytes(inputs)) as progress:
            code = run_check(list(inputs), engine=engine.value, allow=allow, json_path=json_path,
                             junit_path=junit_path, csv_path=csv_path, invariants=invariant or None, master=master,
                             allow_gaps=allow_gaps, progress=progress, memory_limit=memory_limit, trust=trust,
                             deadlines=deadlines, fail_on=fail_on)
        raise typer.Exit(code)
