"""Shared fixtures.

``kafka_cluster``: ONE real 3-node KRaft cluster per Kafka version for the whole session, shared by
every real-cluster module (tests marked ``kafka``). pytest groups the tests by this session-scoped
parameter, so the 4.x cluster is started, used by every module and torn down before the 3.9 one
starts: at most one cluster runs at a time, and each version is started once.

Rules for modules that use it: each module picks its own topic names (a prefix), and leaves every
node running when it is done; ``heal`` (devtools.cluster.testing) restarts or resumes whatever an
earlier module left stopped or paused. Settings every user can live with: small metadata segments
(rolls) and frequent snapshots (``.checkpoint`` files), no automatic leader rebalancing (elections
happen only when a test asks for one).

``pytest -m "not kafka"`` never instantiates it.

Under pytest-xdist (``make test`` and the quick loop run ``-n auto --dist loadgroup``) every test marked
``kafka`` is put in one group, run in order by one worker, so the rule above still holds: one cluster at
a time, each version started once. The tests marked ``spark`` (and not ``kafka``) are another group, so
one worker starts the local Spark session; the other tests are spread over the workers one by one, so a
module-scoped fixture may be made once per worker: fixtures keep to their own tmp paths and free ports.
"""
from __future__ import annotations

import os
import time

import pytest

KAFKA_VERSIONS = ["4.x", "3.9"]

SHARED_SEGMENT_BYTES = 4096
SHARED_OVERRIDES = {
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "metadata.log.max.snapshot.interval.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("kafka"):
            item.add_marker(pytest.mark.xdist_group("real-clusters"))
        elif item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="session", params=KAFKA_VERSIONS)
def kafka_cluster(request, tmp_path_factory):
    """The session's running cluster of one Kafka version (see the module doc)."""
    from devtools.cluster.testing import java_available, running_cluster

    if not java_available():
        pytest.skip("needs java and mvn")
    version = request.param
    root = tmp_path_factory.mktemp(f"kafka-{version}")
    started = time.monotonic()
    with running_cluster(root / "cluster", version, metadata_segment_bytes=SHARED_SEGMENT_BYTES,
                         overrides=dict(SHARED_OVERRIDES)) as c:
        c.startup_seconds = time.monotonic() - started
        c.label = version
        c.workdir = root
        yield c
        pids = [p.pid for p in c.procs.values()]
    leaked = [pid for pid in pids if os.path.exists(f"/proc/{pid}") and _alive(pid)]
    assert not leaked, f"JVMs left running after teardown: {leaked}"
