"""`ctrlaudit export`: the store's events table as a file for pandas, Spark or a BI tool.

A store loaded with --allow-gaps holds stretches of seqs that are not verified data (missing or left
out): the export says so where its reader will look. Parquet: the file's key-value metadata
(`ctrlaudit.gaps`, a JSON list of {from_seq, to_seq, reason}, with `ctrlaudit.cluster_id`,
`ctrlaudit.seq_range` and `ctrlaudit.verified_to`). CSV and JSON lines have no place for it that every
reader keeps or skips alike (a comment line breaks CSV readers; an extra row would be a fake event), so the
gaps go to a sidecar beside the file, `<out>.gaps.csv` / `<out>.gaps.json`, in the same format, written only
when there are gaps. The command's output names each gap (WARNING seq a..b not verified (reason)).
"""
from __future__ import annotations

import contextlib
import csv
import json
import tempfile
from enum import Enum
from pathlib import Path
from typing import cast

import pyarrow as pa
import typer

from ctrlaudit.commands.options import CLUSTER, STORE
from ctrlaudit.commands.output import (FORCE, JSON_OUT, Output, copy_to_stdout, into_place, is_stdout,
                                       refuse_outputs, store_files)
from ctrlaudit.commands.query import _open
from ctrlaudit.errors import UsageError, reader_may_leave, user_errors
from replay import chainstate, who_asked
from replay.store import Store
from schemas.archive.verified import Gap


class ExportTable(str, Enum):
    events = "events"
    attributions = "attributions"


class ExportFormat(str, Enum):
    parquet = "parquet"
    csv = "csv"
    json = "json"


# DuckDB's COPY options per format; json is one object per line (what Spark and pandas' lines=True read)
_COPY = {ExportFormat.parquet: "FORMAT parquet, COMPRESSION zstd", ExportFormat.csv: "FORMAT csv, HEADER true",
         ExportFormat.json: "FORMAT json"}


def register(app: typer.Typer) -> None:
    @app.command("export")
    @user_errors
    def export(
        store: Path = STORE, cluster: str | None = CLUSTER,
        out: Path = typer.Option(..., "--out", help="The file to write; '-' = standard output."),
        fmt: ExportFormat = typer.Option(ExportFormat.parquet, "--format", help="parquet | csv | json (one event "
                                                                                "per line)"),
        table: ExportTable = typer.Option(ExportTable.events, "--table", help="events: every event (the flat "
                                          "layout); attributions: who changed what, each change a request may have "
                                          "made and each denied attempt, with who asked (an archive that keeps "
                                          "requests: ctrlaudit import requests)"),
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """Write the events table (one row per event, the flat layout of schemas/archive/flat.py, in seq order), or
        who changed what (--table attributions, in time order).

        Seqs that are not verified data (a store loaded with --allow-gaps) are named: in Parquet in the file's
        key-value metadata (ctrlaudit.gaps, JSON); in CSV and JSON beside the file, in <out>.gaps.csv or
        <out>.gaps.json (cluster_id, from_seq, to_seq, reason); and in a WARNING line per gap."""
        to_stdout = is_stdout(out)
        # the gaps of a CSV or JSON-lines export go beside it; to standard output, in the WARNING lines only
        sidecar = None if to_stdout else out.with_name(out.name + ".gaps." + ("json" if fmt is ExportFormat.json
                                                                                 else "csv"))
        refuse_outputs({"--out": out, "--json": json_path, "the gaps' file": sidecar}, force=force,
                       inputs=store_files(store))
        with _open(store) as s:
            cluster_id = s.cluster(cluster)
            # an aggregate without GROUP BY: one row, min and max NULL over no events
            n, first, last = cast("tuple[int, int | None, int | None]", s.con.execute(
                "SELECT count(*), min(seq), max(seq) FROM events WHERE cluster_id = $c", {"c": cluster_id}).fetchone())
            status = chainstate.status(s.con, cluster_id)
            # every stretch of the history that is not verified data: between events, and after the last one
            # loaded (the newest file left out); the history the export stands for ends where the later ends
            gaps = list(status.gaps) if last is not None else []
            end = max([last, *(g.to_seq for g in gaps)]) if last is not None else None
            options = _COPY[fmt]
            if fmt is ExportFormat.parquet:
                options += ", KV_METADATA {" + ", ".join(
                    f"{_sql_text(k)}: {_sql_text(v)}" for k, v in _parquet_metadata(cluster_id, end, status.verified_to,
                                                                                    gaps).items()) + "}"
            with (contextlib.nullcontext(None) if to_stdout else into_place(out)) as part, \
                    tempfile.TemporaryDirectory(prefix="ctrlaudit-export-") as spool:
                # DuckDB writes to a path only: standard output gets a copy of a file written aside
                tmp = part or Path(spool) / f"events.{fmt.value}"
                if table is ExportTable.events:
                    s.con.execute(f"COPY (SELECT * FROM events WHERE cluster_id = $c ORDER BY seq) TO "
                                  f"{_sql_text(str(tmp))} ({options})", {"c": cluster_id})
                else:
                    n = _copy_attributions(s, cluster_id, tmp, options)
                if gaps and sidecar is not None and fmt is not ExportFormat.parquet:
                    _write_gaps(sidecar, gaps, fmt)
                if part is None:
                    with reader_may_leave():  # its reader gone, --json FILE is still written
                        copy_to_stdout(tmp)
        said = Output(json_path, stdout_taken=to_stdout)
        said.say(f"wrote {'standard output' if to_stdout else out}: {n:,} "
                 f"{'events' if table is ExportTable.events else 'changes and denied attempts'} of cluster "
                 f"{cluster_id} ({fmt.value})" + (f", seq {first}..{last}" if n and table is ExportTable.events else ""))
        kept = ("the file's metadata, ctrlaudit.gaps" if fmt is ExportFormat.parquet
                else None if sidecar is None else str(sidecar))
        for g in gaps:
            said.say(f"WARNING {g.describe()}" + (f" (listed in {kept})" if kept else ""))
        said.json({"out": str(out), "table": table.value, "rows": n, "events": n, "cluster_id": cluster_id, "format": fmt.value,
                   "verified_to": status.verified_to, "gaps": [_gap(g) for g in gaps],
                   "gaps_file": str(sidecar) if gaps and sidecar is not None and fmt is not ExportFormat.parquet
                   else None})


def _copy_attributions(s: Store, cluster_id: str, path: Path, options: str) -> int:
    """Who changed what (replay/who_asked.py) into `path`; its row count. An archive that keeps no requests has no
    answer to give: refused, never an empty table that reads as "nobody asked"."""
    if not who_asked.has_requests(s.con, cluster_id):
        raise UsageError(f"cluster {cluster_id} keeps no requests: nothing tells who asked (ctrlaudit import requests "
                         "LOGDIR... --out ARCHIVE adds them, then load the archive again)")
    cols, rows = who_asked.table(s.con, cluster_id)
    data = pa.Table.from_pylist([dict(zip(cols, r)) for r in rows], schema=who_asked.TABLE_SCHEMA)
    s.con.register("who_asked_rows", data)
    try:
        s.con.execute(f"COPY (SELECT * FROM who_asked_rows) TO {_sql_text(str(path))} ({options})")
    finally:
        s.con.unregister("who_asked_rows")
    return len(rows)


def _sql_text(text: str) -> str:
    """A SQL string literal (COPY takes no prepared parameters for its path or options; the text may hold a
    hostile file name, in a gap's reason)."""
    return "'" + text.replace("'", "''") + "'"


def _gap(g: Gap) -> dict[str, object]:
    return {"cluster_id": g.cluster_id, "from_seq": g.from_seq, "to_seq": g.to_seq, "reason": g.reason}


def _parquet_metadata(cluster_id: str, end: int | None, verified_to: int, gaps: list[Gap]) -> dict[str, str]:
    """seq_range: the history the file stands for, seq 0 to its end (the last event, or a gap after it)."""
    return {"ctrlaudit.cluster_id": cluster_id, "ctrlaudit.seq_range": f"0..{end}" if end is not None else "",
            "ctrlaudit.verified_to": str(verified_to), "ctrlaudit.gaps": json.dumps([_gap(g) for g in gaps])}


def _write_gaps(sidecar: Path, gaps: list[Gap], fmt: ExportFormat) -> None:
    """The gaps beside a CSV or JSON-lines export, in its format (by way of a temporary file)."""
    with into_place(sidecar) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fo:
        if fmt is ExportFormat.json:
            fo.writelines(json.dumps(_gap(g)) + "\n" for g in gaps)
        else:
            writer = csv.DictWriter(fo, fieldnames=["cluster_id", "from_seq", "to_seq", "reason"])
            writer.writeheader()
            writer.writerows(_gap(g) for g in gaps)
