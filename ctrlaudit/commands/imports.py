"""`ctrlaudit import kraft|zk|logs|requests`: a copied metadata directory, ZooKeeper's data, or the brokers' logs
(from an incident) -> an archive; the nodes' authorizer and request logs (who asked) -> their cluster's archive."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ctrlaudit.commands import import_requests
from ctrlaudit.commands.import_common import append, cluster_named, import_summary, written_line
from ctrlaudit.commands.keys import signers_of
from ctrlaudit.commands.options import SIGNING_KEY
from ctrlaudit.commands.output import FORCE, JSON_OUT, Output, refuse_outputs
from ctrlaudit.errors import user_errors
from ctrlaudit.progress import bar
from schemas.archive.note import Signer
from schemas.archive.writer import continuation
from services.brokerlogs.offline import cluster_id_of_logs, import_log_events, log_layout, zone
from services.kraft.agreement import Agreement, compare, node_copies
from services.kraft.offline import cluster_id_of, import_events, meta_places, metadata_dir, plan
from services.normalize.imports import BadImport, ImportReport
from services.normalize.migration_offline import import_migrated_events, migration_cluster_id
from services.normalize.redaction import patterns
from services.zookeeper.offline import cluster_id_of_zk, import_zk_events, plan_zk

if TYPE_CHECKING:
    from services.normalize.migration_offline import Cutover

imports = typer.Typer(help="Turn controller state from elsewhere into an archive.", no_args_is_help=True,
                      rich_markup_mode=None)


class OnError(str, Enum):
    raise_ = "raise"
    skip = "skip"


@imports.command("kraft", short_help="A copied KRaft metadata log -> an archive.")
@user_errors
def kraft(
    paths: list[Path] = typer.Argument(..., help="__cluster_metadata-0 directories, or segment/.checkpoint files. "
                                       "Several nodes' directories (their meta.properties name distinct node "
                                       "ids): held to each other batch by batch, imported once."),
    out: Path = typer.Option(..., "--out", help="Archive directory to write."),
    cluster_id: str | None = typer.Option(None, "--cluster-id", help="Default: cluster.id of meta.properties."),
    node_id: int = typer.Option(-1, "--node-id", help="The node whose copy this is (recorded in positions)."),
    on_error: OnError = typer.Option(OnError.raise_, "--on-error",
                                     help="raise: stop at a corrupt batch; skip: record it as a capture gap."),
    zookeeper_data: list[Path] | None = typer.Option(
        None, "--zookeeper-data",
        help="A cluster migrated from ZooKeeper (KIP-866): ZooKeeper's dataDir (or log.<zxid> files). One history: "
             "ZooKeeper's transactions up to the KRaft controller's claim, the migration checked against them, then "
             "this metadata log. Repeatable."),
    signing_key: Path | None = SIGNING_KEY,
    json_path: Path | None = JSON_OUT, force: bool = FORCE,
) -> None:
    """Decode a KRaft metadata log (segments and snapshots) into ControllerEvents; with --zookeeper-data, after the
    ZooKeeper-mode history of a migrated cluster."""

    patterns()  # a bad CTRLAUDIT_REDACT_PATTERNS is one line before anything is read or written
    signers = signers_of(signing_key)  # and a key that cannot sign
    refuse_outputs({"--json": json_path}, force=force, inputs=[*paths, *(zookeeper_data or [])],
                   directories={"--out": out})
    if zookeeper_data:
        return _migrated(paths, zookeeper_data, out, cluster_id, node_id, on_error, json_path, signers)
    agreed = _agreed(paths)
    if agreed is not None:  # several nodes' copies, agreeing: the one reaching furthest stands for them all
        paths, node_id = [agreed.chosen.directory], agreed.chosen.node
    report = ImportReport()
    said = Output(json_path)
    for line in agreed.lines() if agreed is not None else ():
        said.say(line)
    cluster = cluster_named(cluster_id, lambda: cluster_id_of(paths), said,
                       "no meta.properties with a cluster.id in " + ", ".join(map(str, meta_places(paths)))
                       + " (Kafka keeps it in the log directory, beside __cluster_metadata-0: copy it too)")
    # Never over an existing archive: an import into a non-empty directory only appends what comes
    # after the chain already there (the same cluster's history), or is refused.
    last = continuation(out, cluster)
    total = sum(f.stat().st_size for f in plan([Path(p) for p in paths]))
    with bar("importing", total) as progress:
        events = import_events(paths, cluster, on_error=on_error.value, node_id=node_id, report=report,
                               progress=progress)
        files, writer = append(out, cluster, events, last, signers)
    said.say(written_line(cluster, f"{report.records:,} records from {len(report.files)} file(s)", report.events, files,
                      out, last, writer))
    for gap in report.gaps:
        said.say(f"capture gap: {gap}")
    if report.partial_tail:
        said.say(f"stopped at an incomplete batch: {report.partial_tail}")
    for snapshot, why in report.passed_over.items():
        said.say(f"not used as an image: {snapshot}: {why}")
    if report.aborted_transactions:
        said.say(f"{report.aborted_transactions} aborted metadata transaction(s) left out, as Kafka does")
    said.json(lambda: import_summary(cluster, out, report, files, last))


def _agreed(paths: list[Path]) -> Agreement | None:
    """Several nodes' metadata directories held to each other (services.kraft.agreement); None for one node's."""
    copies = node_copies([metadata_dir(p) for p in paths]) if all(p.is_dir() for p in paths) else None
    if copies is None:
        return None
    clusters = {c.node: cluster_id_of([c.directory]) for c in copies}
    if len(set(clusters.values())) > 1:
        raise BadImport("the copies are of different clusters: " + ", ".join(
            f"node {n}: {cid or 'no cluster.id'}" for n, cid in clusters.items()))
    return compare(copies)


def _migrated(paths: list[Path], zookeeper_data: list[Path], out: Path, cluster_id: str | None, node_id: int,
              on_error: OnError, json_path: Path | None, signers: list[Signer]) -> None:
    """`import kraft --zookeeper-data`: one archive, one chain across the cutover (services/normalize/
    migration_offline.py)."""

    zk_report, report = ImportReport(), ImportReport()
    said = Output(json_path)
    cluster = cluster_named(cluster_id, lambda: migration_cluster_id([Path(p) for p in paths],
                                                                [Path(p) for p in zookeeper_data]), said,
                       "neither a meta.properties beside the metadata log nor ZooKeeper's /cluster/id states it")
    last = continuation(out, cluster)
    cut: Cutover = {}  # the cutover, as import_migrated_events finds it
    events = import_migrated_events(paths, zookeeper_data, cluster, on_error.value, node_id, zk_report, report, cut)
    files, writer = append(out, cluster, events, last, signers)
    said.say(written_line(cluster, f"{zk_report.records:,} ZooKeeper transactions from {len(zk_report.files)} log(s) up "
                               f"to the KRaft controller's claim, then {report.records:,} metadata records from "
                               f"{len(report.files)} file(s)", zk_report.events + report.events, files, out, last, writer))
    n = cut["compared"]
    said.say(f"migration checked: its transaction (ending at offset {cut['offset']}) restates ZooKeeper's state at the "
             f"claim (zxid {cut['claim_zxid']:#x}): {n['topics']} topic(s), {n['partitions']} partition(s), "
             f"{n['topic_configs']} topic config(s) equal")
    said.say(f"cutover: controller {cut['kraft_controller']}, ZooKeeper epoch {cut['zookeeper_epoch']} -> KRaft epoch "
             f"{cut['kraft_epoch']}; later ZooKeeper writes (dual-writes) not read")
    for gap in zk_report.gaps + report.gaps:
        said.say(f"capture gap: {gap}")
    if zk_report.partial_tail or report.partial_tail:
        said.say(f"stopped at an incomplete record: {zk_report.partial_tail or report.partial_tail}")
    summary = import_summary(cluster, out, report, files, last)
    summary["zookeeper"] = {"transactions": zk_report.records, "files_read": zk_report.files,
                            "events": zk_report.events, "gaps": zk_report.gaps}
    summary["cutover"] = cut
    said.json(lambda: summary)


@imports.command("zk", short_help="ZooKeeper's transaction logs -> an archive.")
@user_errors
def zk(
    paths: list[Path] = typer.Argument(..., help="ZooKeeper dataDir (or its version-2), or log.<zxid> files."),
    out: Path = typer.Option(..., "--out", help="Archive directory to write."),
    cluster_id: str | None = typer.Option(None, "--cluster-id",
                                          help="Default: the /cluster/id znode in the first log."),
    on_error: OnError = typer.Option(OnError.raise_, "--on-error",
                                     help="raise: stop at a corrupt transaction; skip: record it as a capture gap."),
    signing_key: Path | None = SIGNING_KEY,
    json_path: Path | None = JSON_OUT, force: bool = FORCE,
) -> None:
    """Decode ZooKeeper transaction logs of a ZooKeeper-mode Kafka cluster into ControllerEvents."""

    patterns()
    signers = signers_of(signing_key)
    refuse_outputs({"--json": json_path}, force=force, inputs=paths, directories={"--out": out})
    report = ImportReport()
    files = plan_zk([Path(p) for p in paths])
    said = Output(json_path)
    cluster = cluster_named(cluster_id, lambda: cluster_id_of_zk([Path(p) for p in paths]), said,
                       "no /cluster/id znode in ZooKeeper's snapshots or first transaction log given")
    last = continuation(out, cluster)
    with bar("importing", sum(f.stat().st_size for f in files)) as progress:
        events = import_zk_events(paths, cluster, on_error=on_error.value, report=report, progress=progress)
        written, writer = append(out, cluster, events, last, signers)
    said.say(written_line(cluster, f"{report.records:,} transactions from {len(report.files)} log(s)", report.events,
                      written, out, last, writer))
    for gap in report.gaps:
        said.say(f"capture gap: {gap}")
    if report.partial_tail:
        said.say(f"stopped at an incomplete transaction: {report.partial_tail}")
    said.json(lambda: import_summary(cluster, out, report, written, last))


@imports.command("logs", short_help="Brokers' state-change, controller and server logs -> an archive.")
@user_errors
def logs(
    paths: list[Path] = typer.Argument(..., help="Each broker's log directory, or state-change.log / controller.log / "
                                                 "server.log files (rotated and .gz ones too)."),
    out: Path = typer.Option(..., "--out", help="Archive directory to write."),
    cluster_id: str | None = typer.Option(None, "--cluster-id",
                                          help="Default: the id the logs state (a KRaft controller's, or "
                                               "server.log's)."),
    timezone: str = typer.Option("UTC", "--log-timezone", "--timezone",
                                 help="The zone of the brokers' clocks: log4j writes local time without one."),
    log_pattern: str | None = typer.Option(None, "--log-pattern",
                                           help="The brokers' log4j ConversionPattern, when not Kafka's "
                                                "[%d] %p %m (%c)%n (e.g. '%d{ISO8601} %-5p [%t] %c - %m%n')."),
    signing_key: Path | None = SIGNING_KEY,
    json_path: Path | None = JSON_OUT, force: bool = FORCE,
) -> None:
    """Read Kafka's own state-change.log, controller.log and server.log of every broker (ZooKeeper mode and KRaft),
    merged in time order, into ControllerEvents: each partition state the lines state whole, with its file and line;
    what they state only in part, or not at all, is a capture gap."""

    patterns()
    signers = signers_of(signing_key)
    zone(timezone)
    refuse_outputs({"--json": json_path}, force=force, inputs=paths, directories={"--out": out})
    lay = log_layout(log_pattern)
    report = ImportReport()
    said = Output(json_path)
    cluster = cluster_named(cluster_id, lambda: cluster_id_of_logs([Path(p) for p in paths], lay), said,
                       "no controller.log or server.log given states it")
    last = continuation(out, cluster)
    events = import_log_events(paths, cluster, tz=timezone, report=report, lay=lay)
    written, writer = append(out, cluster, events, last, signers)
    said.say(written_line(cluster, f"{report.records:,} log lines from {len(report.files)} file(s)", report.events,
                      written, out, last, writer))
    said.say(f"log times read as {timezone} time (log4j writes the brokers' local time without a zone; "
             "--log-timezone to say another)")
    shown = report.gaps[:20]
    for gap in shown:
        said.say(f"capture gap: {gap}")
    if len(report.gaps) > len(shown):
        said.say(f"... and {len(report.gaps) - len(shown):,} more capture gap(s): `ctrlaudit timeline` lists them")
    said.json(lambda: import_summary(cluster, out, report, written, last))


imports.command("requests", short_help="Nodes' authorizer and request logs (who asked) -> their cluster's archive.")(
    import_requests.requests)


def register(app: typer.Typer) -> None:
    app.add_typer(imports, name="import")
