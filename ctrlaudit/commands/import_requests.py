"""`ctrlaudit import requests`: the nodes' authorizer and request logs (who asked) -> ClientRequest events of their
cluster's archive (services/requests/event.py; docs/how-to/requests.md)."""
from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import typer

from ctrlaudit.commands.import_common import append, cluster_named, written_line
from ctrlaudit.commands.keys import signers_of
from ctrlaudit.commands.options import SIGNING_KEY
from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, refuse_outputs
from ctrlaudit.errors import UsageError, user_errors
from schemas.archive.verified import VerifiedRead
from schemas.archive.writer import continuation
from services.brokerlogs.offline import zone
from services.normalize.redaction import patterns
from services.requests.clocks import disagreements
from services.requests.event import gap_events, request_events
from services.requests.files import cluster_of, node_ids, read_logs
from services.requests.reader import Reading


@user_errors
def requests(
    paths: list[Path] = typer.Argument(..., help="Each broker's and controller's log directory: its kafka-request.log "
                                                 "and kafka-authorizer.log (rotated and .gz ones too), and the "
                                                 "server.log that names its cluster and node."),
    out: Path = typer.Option(..., "--out", help="The archive directory: the requests are appended to their "
                                                "cluster's history there (or begin one)."),
    cluster_id: str | None = typer.Option(None, "--cluster-id", help="Default: the id the server.log beside the "
                                                                     "logs states."),
    node_id: list[str] = typer.Option([], "--node-id", help="DIR=ID: the node whose logs DIR holds, where its "
                                                            "server.log does not say (repeatable)."),
    timezone: str = typer.Option("UTC", "--log-timezone", "--timezone",
                                 help="The zone of the nodes' clocks: log4j writes local time without one."),
    signing_key: Path | None = SIGNING_KEY,
    json_path: Path | None = JSON_OUT, force: bool = FORCE,
) -> None:
    """Keep who asked: every line of the nodes' authorizer and request logs about a request that changes controller
    state (create, delete, grow topics; reassign; elect; configs; ACLs; SCRAM users; quotas; features) becomes a
    ClientRequest event of the cluster's archive, after what it holds, chained and signed like the rest. Lines
    already archived (an earlier import of the same logs, rolled or not) are not appended again."""

    patterns()
    signers = signers_of(signing_key)
    tz = zone(timezone)
    refuse_outputs({"--json": json_path}, force=force, inputs=paths, directories={"--out": out})
    given = _node_ids(node_id)
    said = Output(json_path)
    cluster = cluster_named(cluster_id, lambda: cluster_of(paths), said, "no server.log beside the logs states it")
    nodes = node_ids(paths, given)
    last = continuation(out, cluster)
    known = _kept_ids(out / cluster) if last is not None else set()
    reading = Reading()
    lines = list(read_logs(paths, reading, tz))  # the kept ones: admin requests, not Produce or Fetch
    events = list(request_events(cluster, lines, nodes, known))
    # the lines not read: gaps of attribution, kept after the requests
    events += gap_events(cluster, reading.gaps.values(), nodes, known)
    written, writer = append(out, cluster, events, None, signers)
    said.say(written_line(cluster, f"{reading.lines:,} log lines from {len(nodes)} node(s), {reading.kept:,} about "
                               "requests that change controller state", len(events), written, out, last, writer)
             if events or last is None else
             f"cluster {cluster}: {out} already holds every request read ({reading.kept:,} of {reading.lines:,} "
             "log lines)")
    gaps = [str(g) for g in reading.gaps.values()]
    for g in gaps:
        said.say(f"not read: {g}")
    clocks = [str(c) for c in disagreements(lines)]
    for c in clocks:
        said.say(f"clocks: {c}")
    said.json(lambda: {"cluster_id": cluster, "out": str(out), "nodes": {str(d): n for d, n in nodes.items()},
                       "lines": reading.lines, "requests": reading.kept, "events": len(events),
                       "archive_files": [str(out / cluster / f.file) for f in written],
                       "continued_after_seq": last.last_seq if last is not None else None,
                       "not_read": gaps, "clocks": clocks})


def _kept_ids(archive: Path) -> set[str]:
    """The ids of the requests (and gaps of their logs) `archive` keeps, read through the verified flat decode (the C decoder's columns,
    not an event object per record)."""
    ids: set[str] = set()
    for _, table in VerifiedRead([archive]):
        kept = pc.equal(table.column("source_kind"), "REQUEST_LOG")  # requests and the gaps among them
        ids.update(table.filter(kept).column("event_id").to_pylist())
    return ids


def _node_ids(given: list[str]) -> dict[Path, int]:
    found: dict[Path, int] = {}
    for g in given:
        where, _, n = g.rpartition("=")
        if not where or not n.lstrip("-").isdigit():
            raise UsageError(f"--node-id {g!r}: not DIR=ID (e.g. logs/broker1=1)")
        found[Path(where)] = int(n)
    return found
