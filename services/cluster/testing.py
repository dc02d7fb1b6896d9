"""Test helpers: a cluster that is always torn down, on free ports, in a temporary directory."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .manager import KafkaCluster, find_free_base_port


def java_available() -> bool:
    return shutil.which("java") is not None and shutil.which("mvn") is not None


@contextmanager
def running_cluster(directory: Path, version: str = "4.x", **kw) -> Iterator[KafkaCluster]:
    """Start a cluster and kill every JVM it started on exit, whatever happened in between."""
    cluster = KafkaCluster(directory, version, base_port=kw.pop("base_port", None)
                           or find_free_base_port(), **kw)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


def snapshot_metadata(cluster: KafkaCluster, dest: Path) -> dict[int, list[Path]]:
    """Copy each node's ``__cluster_metadata-0`` (and bootstrap.checkpoint) so that the decoder
    and DumpLogSegments read the same bytes while the cluster keeps appending."""
    out: dict[int, list[Path]] = {}
    for i in cluster.nodes:
        d = dest / f"node{i}"
        shutil.copytree(cluster.metadata_dir(i), d / "__cluster_metadata-0")
        shutil.copy(cluster.nodes[i].data_dir / "bootstrap.checkpoint", d / "bootstrap.checkpoint")
        from services.kraft import metadata_files
        out[i] = [d / "bootstrap.checkpoint", *metadata_files(d / "__cluster_metadata-0")]
    return out
