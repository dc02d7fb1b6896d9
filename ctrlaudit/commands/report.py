"""`ctrlaudit report`: the incident report, one self-contained HTML file."""
from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from ctrlaudit.commands.options import CLUSTER, STORE
from ctrlaudit.commands.output import JSON_OUT, Output
from ctrlaudit.errors import UsageError, user_errors


def register(app: typer.Typer) -> None:
    @app.command("report", short_help="A self-contained HTML incident report.")
    @user_errors
    def report(
        store: Path = STORE, cluster: str = CLUSTER,
        from_time: str = typer.Option(None, "--from", help="Window start: ISO-8601 or epoch millis (default: the "
                                                           "first event)."),
        to_time: str = typer.Option(None, "--to", help="Window end: ISO-8601 or epoch millis (default: the newest "
                                                       "event)."),
        topic: str = typer.Option(None, "--topic", help="Only this topic's partitions (its exact name)."),
        out: Path = typer.Option(Path("incident.html"), "--out", help="The HTML file to write."),
        check_json: Path = typer.Option(None, "--check-json",
                                        help="A `ctrlaudit check --json` report: its verdicts and the violations "
                                             "in the window are shown."),
        run_checks: bool = typer.Option(False, "--run-checks",
                                        help="Run the invariant catalog over the store first (minutes at 10M "
                                             "events; --check-json reuses a report)."),
        json_path: Path = JSON_OUT,
    ) -> None:
        """A self-contained HTML incident report: summary, plots over time, drill-down per partition."""
        from ctrlaudit.commands.query import _open
        from ctrlaudit.report_html import render
        from replay import gaps, incident, topics

        if check_json is not None and run_checks:
            raise UsageError("give --check-json or --run-checks, not both")
        checks = None
        if check_json is not None:
            try:
                checks = json.loads(check_json.read_text())
                checks["invariants"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{check_json}: not a `ctrlaudit check --json` report ({exc})") from None
        elif run_checks:
            if not store.exists():
                raise UsageError(f"{store}: no such store; create it with `ctrlaudit load <archive>`")
            from checks.run import check

            checks = check([str(store)]).to_json()
        with _open(store) as s:
            a = s.point(time=from_time, cluster_id=cluster) if from_time is not None else s.point(seq=0, cluster_id=cluster)
            b = s.point(time=to_time, cluster_id=cluster)
            b = b.depending_on(gaps.between(s.con, b.cluster_id, a.seq, b.seq))  # counts miss what was not read
            if b.seq <= a.seq:
                raise UsageError(f"--to ({b.describe()}) is not after --from ({a.describe()})")
            unknown = topics.unknown_topic(s, b, topic) if topic is not None else None
            if unknown:
                raise UsageError(unknown)
            page = render(s, incident.build(s, a, b, topic), checks)
        tmp = out.with_name(out.name + ".part")
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
        size = len(page.encode())
        said = Output(json_path)
        said.say(f"wrote {out} ({size / 1e6:.1f} MB)")
        said.json({"out": str(out), "bytes": size, "cluster_id": a.cluster_id, "from_seq": a.seq, "to_seq": b.seq})
