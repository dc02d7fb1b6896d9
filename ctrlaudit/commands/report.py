"""`ctrlaudit report`: the incident report, one self-contained HTML file."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from checks.run import check
from ctrlaudit import verdict
from ctrlaudit.commands.options import CLUSTER, STORE
from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, is_stdout, refuse_outputs, store_files, write_text
from ctrlaudit.commands.query import _open
from ctrlaudit.errors import UsageError, user_errors
from ctrlaudit.report_html import render
from replay import gaps, incident, topics
from replay.store import Store
from schemas import times


def register(app: typer.Typer) -> None:
    @app.command("report")
    @user_errors
    def report(
        store: Path = STORE, cluster: str | None = CLUSTER,
        from_time: str | None = typer.Option(None, "--from", help="Window start: ISO-8601 or epoch millis; the events "
                                                                  "at it are in the window (default: the first event)."),
        to_time: str | None = typer.Option(None, "--to", help="Window end: ISO-8601 or epoch millis (default: the "
                                                              "newest event)."),
        topic: str | None = typer.Option(None, "--topic", help="Only this topic's partitions (its exact name)."),
        out: Path = typer.Option(Path("incident.html"), "--out", help="The HTML file to write; '-' = standard "
                                                                      "output."),
        check_json: Path | None = typer.Option(None, "--check-json",
                                               help="A `ctrlaudit check --json` report: its verdicts and the "
                                                    "violations in the window are shown."),
        run_checks: bool = typer.Option(False, "--run-checks",
                                        help="Run the invariant catalog over the store first (minutes at 10M "
                                             "events; --check-json reuses a report)."),
        json_path: Path | None = JSON_OUT, force: bool = FORCE,
    ) -> None:
        """A self-contained HTML incident report: summary, plots over time, drill-down per partition."""
        if check_json is not None and run_checks:
            raise UsageError("give --check-json or --run-checks, not both")
        refuse_outputs({"--out": out, "--json": json_path}, force=force, inputs=[*store_files(store), check_json])
        checks, checks_from = None, ""
        if check_json is not None:
            checks, checks_from = verdict.read(check_json), str(check_json)
        elif run_checks:
            if not store.exists():
                raise UsageError(f"{store}: no such store; create it with `ctrlaudit load <archive>`")

            # as --check-json would read it from the file `check --json` writes
            checks_from = "the check run"
            checks = verdict.shape(json.loads(json.dumps(check([str(store)]).to_json(), default=str)), checks_from)
        with _open(store) as s:
            b = s.point(time=to_time, cluster_id=cluster)
            a = incident.opening(s, b, from_time)  # the window: every event after a, up to and including b
            b = b.depending_on(gaps.between(s.con, b.cluster_id, a.seq, b.seq))  # counts miss what was not read
            if b.seq <= a.seq:
                raise UsageError(f"no event from --from {from_time} to --to: the last at or before --to is at seq "
                                 f"{b.seq} ({times.show(b.event_time_ms)})")
            unknown = topics.unknown_topic(s, b, topic) if topic is not None else None
            if unknown:
                raise UsageError(unknown)
            judged = None
            if checks is not None:
                judged = verdict.bind(checks, checks_from, str(store), a.cluster_id, (a.seq + 1, b.seq),
                                      lambda seq: _hash_at(s, a.cluster_id, seq), s.point(cluster_id=a.cluster_id).seq)
            page = render(s, incident.build(s, a, b, topic), judged)
        write_text(out, page)
        size = len(page.encode())
        said = Output(json_path, stdout_taken=is_stdout(out))
        said.say(f"wrote {'the report to standard output' if is_stdout(out) else out} ({size / 1e6:.1f} MB)")
        said.json({"out": str(out), "bytes": size, "cluster_id": a.cluster_id, "from_seq": a.seq, "to_seq": b.seq})


def _hash_at(s: Store, cluster_id: str, seq: int) -> str | None:
    """The store's chain hash at a seq of a cluster (None: the store does not hold that seq)."""
    row = s.con.execute("SELECT hash FROM events WHERE cluster_id = ? AND seq = ?", [cluster_id, seq]).fetchone()
    return row[0] if row else None
