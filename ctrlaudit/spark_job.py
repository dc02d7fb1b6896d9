"""The Spark batch job: `spark-submit ctrlaudit/spark_job.py --master local[2] ARCHIVE... [--json F] [--junit F]
[--allow NAME ...] [--invariant NAME ...]`. Exit code as run_check: 0 clean, 1 violations, 2 bad input.

ARCHIVE: a local path, or a Hadoop URI (hdfs://, s3a://, file://, …: checks/hadoop.py).

`--master` is passed through (spark-submit's own flag works too; this one is for `python -m`).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    # spark-submit runs this file as a script: make the repository importable.
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))

    parser = argparse.ArgumentParser(prog="ctrlaudit-check-spark", description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="archive files or directories (local paths or Hadoop URIs: hdfs://, s3a://, "
                        "file://), or one replay store")
    parser.add_argument("--master", default=None, help="Spark master (default: spark-submit's, else local[2])")
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--junit", dest="junit_path")
    parser.add_argument("--force", action="store_true", help="replace an existing --json/--junit file")
    parser.add_argument("--allow", action="append", default=[])
    parser.add_argument("--invariant", action="append", default=None)
    parser.add_argument("--allow-gaps", action="store_true",
                        help="check around missing or damaged archive files (findings there: no data)")
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    args = parser.parse_args(argv)
    from ctrlaudit.errors import main_errors

    # every error is one line "ctrlaudit: error: ..." with run_check's exit codes, as `ctrlaudit check`
    return main_errors(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    from checks.inputs import BadInput, is_uri
    from ctrlaudit.check_run import run_check
    from checks.spark_engine import build_session  # extra: spark

    # A URI (hdfs://, s3a://, file://, …) is listed, copied and verified on the driver through Hadoop's
    # filesystem API (checks.hadoop); a local path is verified in place. Either way the driver verifies
    # every file's manifest and chain (schemas.archive.verified) before Spark reads a byte.
    # A missing local input is found before a JVM is started (about 10 s and a screen of Spark's log).
    missing = [p for p in args.inputs if not is_uri(p) and not Path(p).exists()]
    if missing:
        raise BadInput(f"{missing[0]}: no such file or directory")
    from ctrlaudit.commands.output import check_inputs, refuse_outputs

    # the rule of every `ctrlaudit` output (ctrlaudit/commands/output.py), before a JVM is started
    refuse_outputs({"--json": args.json_path, "--junit": args.junit_path}, force=args.force,
                   inputs=check_inputs(args.inputs))
    # Under spark-submit (it starts the JVM and hands its gateway port to this process) the master is
    # spark-submit's own --master unless this --master overrides it; run alone, local[2].
    master = args.master
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[2]"
    spark = build_session(master, shuffle_partitions=args.shuffle_partitions)
    try:
        from ctrlaudit.progress import archive_bytes, bar

        # the bar covers the driver's verified read; Spark's own progress is off (spark.ui.*)
        with bar("verifying on the driver", archive_bytes(args.inputs)) as progress:
            return run_check(args.inputs, engine="spark", allow=args.allow, json_path=args.json_path,
                             junit_path=args.junit_path, invariants=args.invariant, spark=spark,
                             allow_gaps=args.allow_gaps, progress=progress)
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
