"""`ctrlaudit export`: the store's events table as a file for pandas, Spark or a BI tool."""
from __future__ import annotations

import os
from enum import Enum
from pathlib import Path

import typer

from ctrlaudit.commands.options import CLUSTER, STORE
from ctrlaudit.commands.output import JSON_OUT, Output
from ctrlaudit.errors import UsageError, user_errors


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
        out: Path = typer.Option(..., "--out", help="The file to write."),
        fmt: ExportFormat = typer.Option(ExportFormat.parquet, "--format", help="parquet | csv | json (one event "
                                                                                "per line)"),
        json_path: Path = JSON_OUT,
    ) -> None:
        """Write the events table (one row per event, the flat layout of schemas/flat.py, in seq order)."""
        from ctrlaudit.commands.query import _open

        if out.exists():
            raise UsageError(f"{out}: exists; give a new file")
        with _open(store) as s:
            cluster_id = s.cluster(cluster)
            tmp = out.with_name(out.name + ".part")
            # COPY cannot take a prepared parameter for the path; quote it as a SQL string literal
            target = "'" + str(tmp).replace("'", "''") + "'"
            s.con.execute(f"COPY (SELECT * FROM events WHERE cluster_id = $c ORDER BY seq) TO {target} "
                          f"({_COPY[fmt]})", {"c": cluster_id})
            n = s.con.execute("SELECT count(*) FROM events WHERE cluster_id = $c", {"c": cluster_id}).fetchone()[0]
        os.replace(tmp, out)
        said = Output(json_path)
        said.say(f"wrote {out}: {n:,} events of cluster {cluster_id} ({fmt.value})")
        said.json({"out": str(out), "events": n, "cluster_id": cluster_id, "format": fmt.value})
