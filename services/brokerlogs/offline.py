"""Offline import from Kafka's own logs: every broker's ``state-change.log``, ``controller.log`` and ``server.log``
(rotated files too), merged in time order -> ControllerEvents (see ``brokerlog_normalizer`` for what is and is not
inferred). The counterpart of ``offline.py`` and ``zk_offline.py`` for incidents with no metadata log or
ZooKeeper data left, or from before capture ran."""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from schemas import names
from schemas.events import ControllerEvent
from services.brokerlogs.layout import KAFKA, BadLayout, Layout, layout
from services.brokerlogs.lines import BadLogs, LogLine, check_text, log_files, merged, read_log, text_lines
from services.brokerlogs.normalizer import BrokerLogNormalizer
from services.normalize.imports import BadImport, ImportReport, Made, import_loop


def zone(name: str) -> ZoneInfo:
    """The zone the brokers' clocks wrote their log times in (log4j's %d has none)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadImport(f"--timezone {name!r}: not a time zone name (e.g. UTC, Europe/Berlin)") from None


def log_layout(pattern: str | None) -> Layout:
    """The brokers' log4j layout: Kafka's shipped one, or the ConversionPattern given (--log-pattern)."""
    if pattern is None:
        return KAFKA
    try:
        return layout(pattern)
    except BadLayout as exc:
        raise BadImport(str(exc)) from None


def plan_logs(paths: Sequence[Path], lay: Layout = KAFKA) -> list[list[Path]]:
    try:
        return log_files(paths, lay)
    except BadLogs as exc:
        raise BadImport(str(exc)) from None


_CLUSTER_ID = re.compile(r"Creating new QuorumController with clusterId ([\w-]+)|\bCluster ID = ([\w-]+)")


def cluster_id_of_logs(paths: Sequence[Path], lay: Layout = KAFKA) -> str | None:
    """Kafka's cluster id as the logs state it: a KRaft controller's ``Creating new QuorumController with
    clusterId``, or a broker's ``Cluster ID =`` in the server.log beside the given logs. Logs of two clusters
    are refused: merged, they would make one history of two."""
    logs = plan_logs(paths, lay)
    found: dict[str, str] = {}
    candidates = [f for log in logs for f in log if f.name.startswith(("controller.log", "server.log"))]
    candidates += sorted({f.parent / "server.log" for log in logs for f in log if (f.parent / "server.log").is_file()})
    for f in dict.fromkeys(candidates):
        try:
            for line in text_lines(f):
                if "Cluster" in line or "clusterId" in line:
                    m = _CLUSTER_ID.search(line)
                    if m:
                        found.setdefault(names.cluster_id(m.group(1) or m.group(2), "cluster id", str(f)), str(f))
        except BadLogs as exc:
            raise BadImport(str(exc)) from None
        except EOFError:  # a .gz cut short
            raise BadImport(f"{f}: cannot be read: compressed data ends before its end") from None
    if len(found) > 1:
        raise BadImport("the logs are of more than one cluster: " +
                        ", ".join(f"{cid} ({where})" for cid, where in sorted(found.items())))
    return next(iter(found), None)


def import_log_events(paths: Sequence[str | Path], cluster_id: str, tz: str = "UTC",
                      report: ImportReport | None = None, lay: Layout = KAFKA) -> Iterator[ControllerEvent]:
    """The events of the logs at `paths`. The files are found, and each one's start checked to be a text log,
    now: a binary file is refused before anything is written."""
    report = report if report is not None else ImportReport()
    logs = plan_logs([Path(p) for p in paths], lay)
    zi = zone(tz)
    try:
        check_text((f for log in logs for f in log), layout=lay)
    except BadLogs as exc:
        raise BadImport(str(exc)) from None
    return _events(logs, cluster_id, zi, report, lay)


def _events(logs: list[list[Path]], cluster_id: str, zi: ZoneInfo, report: ImportReport,
            lay: Layout) -> Iterator[ControllerEvent]:
    norm = BrokerLogNormalizer(cluster_id)
    unparsed: list[str] = []

    def steps() -> Iterator[Made | LogLine]:
        """The steps of reading the logs (services.normalize.imports.import_loop): every file, read as one
        stream of lines merged in time order, then what the end of the lines settles."""
        yield Made(files=[str(f) for log in logs for f in log])
        yield from merged(read_log(log, zi, unparsed, lay) for log in logs)
        yield Made(norm.finish(), norm.gaps)
        if unparsed:
            yield Made(gaps=[f"{len(unparsed)} line(s) not in the log4j layout (cut short, or another layout), not "
                             f"read (first: {unparsed[0]})"])

    return import_loop(steps(), norm.feed, report, refuse=_refuse)


def _refuse(exc: Exception) -> str | None:
    return str(exc) if isinstance(exc, BadLogs) else None
