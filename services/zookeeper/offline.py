"""Offline import from ZooKeeper's own files: a copied ``dataDir`` (or its ``version-2``, or ``log.*`` files)
-> ControllerEvents, in zxid order (the counterpart of ``offline.py`` for KRaft's metadata log).

Every transaction log from the oldest kept one is replayed. When the logs do not start at the first zxid
(older logs purged, ``autopurge``), the import bootstraps from the oldest snapshot the logs continue (its
znodes become bootstrap events: state, not transitions) and records the stretch before it as a
``CaptureGap``; without such a snapshot the gap says partitions are known from their next write on.
Missing zxids between files and corrupt stretches (``on_error="skip"``) are gaps too, never silent holes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from schemas import names
from schemas.events import ControllerEvent
from services.normalize.imports import BadImport, ImportReport, Made, import_loop
from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper import Txn, TxnLogReader, ZooKeeperFileError, log_start_zxid, snapshot_zxid, txn_logs, znodes
from services.zookeeper.snapshot import read_snapshot


def snapshots_zk(paths: Sequence[Path]) -> list[Path]:
    """The ``snapshot.*`` files among ``paths`` (directories searched like ``plan_zk``), in zxid order."""
    found: list[Path] = []
    for p in paths:
        d = p / "version-2" if p.is_dir() and (p / "version-2").is_dir() else p
        found += [f for f in d.iterdir() if snapshot_zxid(f) is not None] if d.is_dir() else \
            [d] if snapshot_zxid(d) is not None else []
    return sorted(set(found), key=lambda f: snapshot_zxid(f) or 0)  # (every one has a zxid)


def plan_zk(paths: Sequence[Path]) -> list[Path]:
    """The transaction logs to read, in zxid order."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            d = p / "version-2" if (p / "version-2").is_dir() else p
            files.extend(txn_logs(d))
        elif p.exists():
            if snapshot_zxid(p) is not None:
                continue  # snapshots: not read yet (see the module doc)
            if log_start_zxid(p) is None:
                raise BadImport(f"{p}: not a ZooKeeper transaction log (log.<zxid in hex>)")
            files.append(p)
        else:
            raise BadImport(f"{p}: no such file or directory")
    if not files:
        raise BadImport("no ZooKeeper transaction logs (version-2/log.*) in " + ", ".join(map(str, paths)))
    return sorted(set(files), key=lambda f: log_start_zxid(f) or 0)  # (every one has a zxid)


def _follows(prev: int, zxid: int) -> bool:
    """zxid comes right after prev: the next counter in the same ZooKeeper epoch, or the first of a later one
    (a new ZooKeeper leader starts counting at 1 in its epoch, the high 32 bits)."""
    return zxid == prev + 1 or (zxid >> 32 > prev >> 32 and zxid & 0xFFFFFFFF <= 1)


def cluster_id_of_zk(paths: Sequence[Path]) -> str | None:
    """Kafka's cluster id: the ``/cluster/id`` znode, from the oldest snapshot that has it, else from its
    creation in the first log (a cluster's first log has it)."""
    def cluster_id(data: bytes | None, where: str) -> str | None:
        try:
            found = znodes.text(znodes.json_object(data), "id")
        except znodes.ZnodeError as exc:  # a cluster id that is not a string: not guessed at
            raise exc.at(where, "/cluster/id") from None
        return names.cluster_id(found, "the /cluster/id znode's id", where) if found is not None else None

    for snap in snapshots_zk(paths):
        try:
            node = next((n for n in read_snapshot(snap).nodes if n.path == "/cluster/id"), None)
        except ZooKeeperFileError:
            continue
        if node is not None:
            return cluster_id(node.data, str(snap))
    for f in plan_zk(paths)[:1]:
        try:
            for txn in TxnLogReader(f, on_error="skip"):
                for op in txn.ops:
                    if op.kind in ("create", "create2") and op.path == "/cluster/id":
                        return cluster_id(op.data, f"{f}, zxid {txn.zxid:#x}")
        except ZooKeeperFileError:
            return None
    return None


def import_zk_events(paths: Sequence[str | Path], cluster_id: str, on_error: str = "raise",
                     report: ImportReport | None = None,
                     progress: Callable[[int], None] | None = None, *,
                     normalizer: ZooKeeperNormalizer | None = None,
                     until: Callable[[Txn], bool] | None = None) -> Iterator[ControllerEvent]:
    """`until`: stop after the first transaction it holds true for (a migration's cutover: what ZooKeeper
    records after it is not this history's); `normalizer`: the caller's, to read its image afterwards."""
    report = report if report is not None else ImportReport()
    norm = normalizer if normalizer is not None else ZooKeeperNormalizer(cluster_id)
    files = plan_zk([Path(p) for p in paths])
    yield from import_loop(_steps(files, [Path(p) for p in paths], norm, on_error, report), norm.feed, report,
                           progress, until, _refuse)


def _refuse(exc: Exception) -> str | None:
    return str(exc) if isinstance(exc, ZooKeeperFileError) else None


def _steps(files: list[Path], paths: list[Path], norm: ZooKeeperNormalizer, on_error: str,
           report: ImportReport) -> Iterator[Path | Made | Txn]:
    """The steps of reading ZooKeeper's files in zxid order (services.normalize.imports.import_loop): the snapshot
    the logs continue, when they do not start at the first zxid; each log, its transactions, and the gaps between."""
    last: int | None = None
    first = log_start_zxid(files[0])
    if first is not None and first > 1:
        usable = [s for s in snapshots_zk(paths) if (snapshot_zxid(s) or 0) >= first - 1]
        if usable:
            snap = read_snapshot(usable[0])
            yield _gap(norm, 1, snap.zxid, f"history up to zxid {snap.zxid:#x} is in no log given; "
                       f"state bootstrapped from {usable[0].name}", snap.last_mtime, files=[str(usable[0])])
            yield Made(norm.bootstrap(snap))
            last = snap.zxid
    for f in files:
        yield f
        reader = TxnLogReader(f, on_error=on_error)
        skipped = 0
        for txn in reader:
            if len(reader.skipped) > skipped:
                skipped = len(reader.skipped)
                yield _gap(norm, (last or 0) + 1, txn.zxid - 1, str(reader.skipped[-1]), txn.time)
            elif last is None and txn.zxid > 1:
                yield _gap(norm, 1, txn.zxid - 1,
                           f"history before zxid {txn.zxid:#x} is not in these logs ({f.name} is the oldest); "
                           f"partitions are known from their next write on", txn.time)
            elif last is not None and txn.zxid > last and not _follows(last, txn.zxid):
                yield _gap(norm, last + 1, txn.zxid - 1,
                           f"zxids {last + 1:#x}..{txn.zxid - 1:#x} are in no log given (before {f.name})", txn.time)
            last = max(last or 0, txn.zxid)
            yield txn
        if len(reader.skipped) > skipped:  # damage at the end of the file
            yield _gap(norm, (last or 0) + 1, -1, str(reader.skipped[-1]))
        if reader.partial_tail is not None:
            report.partial_tail = f"{f}: the transaction at byte {reader.partial_tail} is incomplete"


def _gap(norm: ZooKeeperNormalizer, lo: int, hi: int, reason: str, t: int = -1, files: Sequence[str] = ()) -> Made:
    return Made([norm.gap(lo, hi, reason, t)], [reason], files)
