"""Test helpers: a cluster that is always torn down, on free ports, in a temporary directory."""

from __future__ import annotations

import errno
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .manager import ClusterError, KafkaCluster, find_free_base_port


def java_available() -> bool:
    return shutil.which("java") is not None and shutil.which("mvn") is not None


def wait_until(pred: Callable[[], Any], timeout: float, what: str, step: float = 0.5) -> Any:
    """The first truthy value of `pred()` within `timeout` seconds; an exception counts as not yet (a
    node paused, dying or restarting: ask again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            v = pred()
        except Exception:
            v = None
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def running_cluster(directory: Path, version: str = "4.x", cluster_class: type[KafkaCluster] = KafkaCluster,
                    **kw) -> Iterator[KafkaCluster]:
    """Start a cluster (KRaft, or ZooKeeper mode with ``ZkKafkaCluster``) and kill every JVM it started on
    exit, whatever happened in between."""
    fixed = kw.pop("base_port", None)
    cluster = cluster_class(directory, version, base_port=fixed or find_free_base_port(), **kw)
    try:
        try:
            cluster.up()
        except ClusterError as exc:
            # a port taken between the check and the bind (another process): once more, elsewhere
            if fixed or "openServerSocket" not in str(exc) and "Address already in use" not in str(exc):
                raise
            cluster.down()
            shutil.rmtree(directory, ignore_errors=True)
            cluster = cluster_class(directory, version, base_port=find_free_base_port(), **kw)
            cluster.up()
        yield cluster
    finally:
        cluster.down()


def snapshot_metadata(cluster: KafkaCluster, dest: Path) -> dict[int, list[Path]]:
    """Copy each node's ``__cluster_metadata-0`` (and bootstrap.checkpoint) so that the decoder
    and DumpLogSegments read the same bytes while the cluster keeps appending. Kafka 4.4's format writes
    no bootstrap.checkpoint: its bootstrap records are the log's first snapshot,
    ``00000000000000000000-0000000000.checkpoint``, copied with the directory."""
    from services.kraft import metadata_files

    out: dict[int, list[Path]] = {}
    for i in cluster.nodes:
        d = dest / f"node{i}"
        copy_live_directory(cluster.metadata_dir(i), d / "__cluster_metadata-0")
        out[i] = metadata_files(d / "__cluster_metadata-0")
        bootstrap = cluster.nodes[i].data_dir / "bootstrap.checkpoint"
        if bootstrap.exists():
            out[i].insert(0, Path(shutil.copy(bootstrap, d / "bootstrap.checkpoint")))
    return out


def copy_live_directory(source: Path, target: Path) -> Path:
    """Copy a directory a running broker or ZooKeeper keeps writing. Files in flight (a snapshot's
    ``.checkpoint.part``, a segment renamed ``.deleted`` or ``.swap``) are left out, and a file that
    vanishes between the listing and its copy (renamed or deleted by the broker at that moment) is
    not an error: the copy is a log as it was at some point, which is what the tests compare."""
    try:
        return Path(shutil.copytree(source, target, copy_function=shutil.copy2,
                                    ignore=shutil.ignore_patterns("*.part", "*.deleted", "*.swap")))
    except shutil.Error as exc:
        # copytree copies everything it can, then raises once with a (src, dst, why) per failure
        others = [e for e in exc.args[0] if f"[Errno {errno.ENOENT}]" not in str(e[2])]
        if others:
            raise shutil.Error(others) from exc
        return target


def stop_process(p: subprocess.Popen[Any], timeout: float = 30) -> None:
    """Stop a service the test started as an operator would: SIGTERM, then SIGKILL if it has not ended in `timeout` s."""
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()


def heal(cluster: KafkaCluster, timeout: float = 90) -> KafkaCluster:
    """Bring a shared cluster back to all nodes running and unpaused (a test before may have
    killed, stopped or paused one) and wait until every restarted node finished startup."""
    started = []
    for i in cluster.nodes:
        cluster.resume_node(i)
        if not cluster.is_running(i):
            cluster.start_node(i)
            started.append(i)
    if started:
        cluster.wait_ready(started, timeout=timeout)
    return cluster


def copy_node_metadata(cluster: KafkaCluster, node_id: int, dest: Path) -> Path:
    """Copy one node's ``__cluster_metadata-0`` (plus meta.properties, so the import finds the
    cluster id) and cut a copied active segment that ends inside a batch (the copy raced an
    append) back to its last whole batch. Returns the copied partition directory."""
    root = dest / f"node{node_id}"
    target = root / "__cluster_metadata-0"
    copy_live_directory(cluster.metadata_dir(node_id), target)
    shutil.copy(cluster.layout(node_id).data_dir / "meta.properties", root / "meta.properties")
    cut_partial_tails(target)
    return target


def cut_partial_tails(directory: Path) -> None:
    """Cut each copied segment that ends inside a batch (the copy raced an append, or a kill -9 left
    half a batch) back to its last whole batch."""
    from services.kraft import LogReader, metadata_files
    for f in metadata_files(directory):
        reader = LogReader(f, live=True)
        for _ in reader.batches():
            pass
        if reader.partial_tail is not None:
            with open(f, "r+b") as fo:
                fo.truncate(reader.partial_tail.position)
