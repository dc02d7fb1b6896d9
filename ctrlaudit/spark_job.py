"""The Spark batch job: `spark-submit ctrlaudit/spark_job.py --master local[2] ARCHIVE... [--json F] [--junit F]
[--allow NAME ...] [--invariant NAME ...] [--deadline NAME=DURATION ...] [--fail-on warning]`. Exit code as run_check: 0 clean, 1 violations, 2 bad input.

ARCHIVE: a local path, or a Hadoop URI (hdfs://, s3a://, file://, …: checks/hadoop.py).

`--master` is passed through (spark-submit's own flag works too; this one is for `python -m`).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

# spark-submit runs this file as a script: make the repository importable before anything of it is imported
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import typer  # noqa: E402

from checks.deadlines import parse as parse_deadlines  # noqa: E402
from checks.inputs import BadInput, is_uri  # noqa: E402
from checks.report import FAIL_ON as FAIL_ON_CHOICES  # noqa: E402
from ctrlaudit.check_run import run_check  # noqa: E402
from ctrlaudit.commands.output import check_inputs, refuse_outputs  # noqa: E402
from ctrlaudit.commands.keys import trust_of  # noqa: E402
from ctrlaudit.commands.options import DEADLINE, FAIL_ON  # noqa: E402
from ctrlaudit.errors import main_errors  # noqa: E402
from ctrlaudit.progress import archive_bytes, bar  # noqa: E402
from schemas import entry  # noqa: E402

cli = entry.app("The Spark batch job.")


@cli.command()
def spark_job(
    inputs: list[str] = typer.Argument(..., metavar="ARCHIVE", help="archive files or directories (local paths or Hadoop URIs: hdfs://, "
                                                 "s3a://, file://), or one replay store"),
    master: str | None = typer.Option(None, "--master", help="Spark master (default: spark-submit's, else local[2])"),
    json_path: str | None = typer.Option(None, "--json", help="the report as JSON"),
    junit_path: str | None = typer.Option(None, "--junit", help="the report as JUnit XML"),
    force: bool = typer.Option(False, "--force", help="replace an existing --json/--junit file"),
    allow: list[str] = typer.Option([], "--allow", help="an allowed invariant (repeatable)"),
    invariant: list[str] | None = typer.Option(None, "--invariant", help="check only this invariant (repeatable)"),
    allow_gaps: bool = typer.Option(False, "--allow-gaps",
                                    help="check around missing or damaged archive files (findings there: no data)"),
    shuffle_partitions: int = typer.Option(8, "--shuffle-partitions"),
    trusted_key: list[str] = typer.Option([], "--trusted-key", help="a log key to trust (as `ctrlaudit check "
                                          "--trusted-key`): the driver checks every signed checkpoint"),
    witness_key: list[str] = typer.Option([], "--witness-key", help="a witness key whose co-signature is required"),
    deadline: list[str] = DEADLINE, fail_on: str = FAIL_ON,
) -> int:
    """Check archives with Spark SQL: the outputs and exit codes of `ctrlaudit check`."""
    # every error is one line "ctrlaudit: error: ..." with run_check's exit codes, as `ctrlaudit check`
    return main_errors(lambda: _run(inputs, master, json_path, junit_path, force, allow, invariant or None,
                                    allow_gaps, shuffle_partitions, trusted_key, witness_key, deadline, fail_on))


def main(argv: list[str] | None = None) -> int:
    return entry.run(cli, argv, "spark-submit ctrlaudit/spark_job.py", "ctrlaudit")


def _run(inputs: list[str], master: str | None, json_path: str | None, junit_path: str | None, force: bool,
         allow: list[str], invariants: list[str] | None, allow_gaps: bool, shuffle_partitions: int,
         trusted_key: list[str], witness_key: list[str], deadline: list[str], fail_on: str) -> int:
    from checks.spark_engine import build_session  # extra: spark

    # A URI (hdfs://, s3a://, file://, …) is listed, copied and verified on the driver through Hadoop's
    # filesystem API (checks.hadoop); a local path is verified in place. Either way the driver verifies
    # every file's manifest and chain (schemas.archive.verified) before Spark reads a byte.
    # A missing local input is found before a JVM is started (about 10 s and a screen of Spark's log).
    missing = [p for p in inputs if not is_uri(p) and not Path(p).exists()]
    if missing:
        raise BadInput(f"{missing[0]}: no such file or directory")
    # the rule of every `ctrlaudit` output (ctrlaudit/commands/output.py), before a JVM is started
    refuse_outputs({"--json": json_path, "--junit": junit_path}, force=force, inputs=check_inputs(inputs))
    trust = trust_of(trusted_key, witness_key)  # a bad key is found before a JVM is started too
    deadlines = parse_deadlines(deadline)  # and a bad deadline or --fail-on
    if fail_on not in FAIL_ON_CHOICES:
        raise BadInput(f"--fail-on {fail_on!r}: one of {', '.join(FAIL_ON_CHOICES)}")
    # Under spark-submit (it starts the JVM and hands its gateway port to this process) the master is
    # spark-submit's own --master unless this --master overrides it; run alone, local[2].
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[2]"
    spark = build_session(master, shuffle_partitions=shuffle_partitions)
    try:
        # the bar covers the driver's verified read; Spark's own progress is off (spark.ui.*)
        with bar("verifying on the driver", archive_bytes(inputs)) as progress:
            return run_check(inputs, engine="spark", allow=allow, json_path=json_path, junit_path=junit_path,
                             invariants=invariants, spark=spark, allow_gaps=allow_gaps, progress=progress,
                             trust=trust, deadlines=deadlines, fail_on=fail_on)
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
