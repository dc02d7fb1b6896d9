"""`ctrlaudit export`: the store's events table as a file for pandas, Spark or a BI tool."""
from __future__ import annotations

import contextlib
import tempfile
from enum import Enum
from pathlib import Path

import typer

from ctrlaudit.commands.options import CLUSTER, STORE
from ctrlaudit.commands.output import (FORCE, JSON_OUT, Output, copy_to_stdout, into_place, is_stdout,
                                       refuse_outputs, store_files)
from ctrlaudit.errors import user_errors


class ExportFormat(str, Enum):
    parquet = "parquet"
    csv = "csv"
    json = "json"


# DuckDB's COPY options per format; json is one object per line (what Spark and pandas' lines=True read)
_COPY = {ExportFormat.parquet: "FORMAT parquet, COMPRESSION zstd", ExportFormat.csv: "FORMAT csv, HEADER true",
         ExportFormat.json: "FORMAT json"}


def register(app: typer.Typer) -> None:
    @app.command("export", short_help="Write the events table (Parquet, CSV, JSON).")
    @user_errors
    def export(
        store: Path = STORE, cluster: str = CLUSTER,
        out: Path = typer.Option(..., "--out", help="The file to write; '-' = standard output."),
        fmt: ExportFormat = typer.Option(ExportFormat.parquet, "--format", help="parquet | csv | json (one event "
                                                                                "per line)"),
        json_path: Path = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Write the events table (one row per event, the flat layout of schemas/flat.py, in seq order)."""
        from ctrlaudit.commands.query import _open

        refuse_outputs({"--out": out, "--json": json_path}, force=force, inputs=store_files(store))
        with _open(store) as s, (contextlib.nullcontext(None) if is_stdout(out) else into_place(out)) as part:
            cluster_id = s.cluster(cluster)
            with tempfile.TemporaryDirectory(prefix="ctrlaudit-export-") as spool:
                # DuckDB writes to a path only: standard output gets a copy of a file written aside
                tmp = part or Path(spool) / f"events.{fmt.value}"
                # COPY cannot take a prepared parameter for the path; quote it as a SQL string literal
                target = "'" + str(tmp).replace("'", "''") + "'"
                s.con.execute(f"COPY (SELECT * FROM events WHERE cluster_id = $c ORDER BY seq) TO {target} "
                              f"({_COPY[fmt]})", {"c": cluster_id})
                if part is None:
                    copy_to_stdout(tmp)
            n = s.con.execute("SELECT count(*) FROM events WHERE cluster_id = $c", {"c": cluster_id}).fetchone()[0]
        said = Output(json_path, stdout_taken=is_stdout(out))
        said.say(f"wrote {'standard output' if is_stdout(out) else out}: {n:,} events of cluster {cluster_id} "
                 f"({fmt.value})")
        said.json({"out": str(out), "events": n, "cluster_id": cluster_id, "format": fmt.value})
