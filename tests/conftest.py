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
one worker starts the local Spark session. Every other test is in its module's group (or the group its
module names with ``pytest.mark.xdist_group``, for modules that share a cache), so a module-scoped fixture
is made once a run. Workers run side by side: fixtures keep to their own tmp paths and free ports.

``pytest.mark.matrix`` on a long case matrix (a parametrized test whose every case runs the CLI or a big
input): the quick loop (``-m "not slow"``) runs its first case, ``make test`` every case.
"""
from __future__ import annotations

import os
import signal
import time

import pytest

KAFKA_VERSIONS = ["4.x", "3.9"]

SHARED_SEGMENT_BYTES = 4096
SHARED_OVERRIDES = {
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "metadata.log.max.snapshot.interval.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


def pytest_configure(config: pytest.Config) -> None:
    # Tests interrupt the CLI's children with SIGINT, as Ctrl-C does. A run started in the background of a
    # shell without job control (`pytest ... &`) has SIGINT ignored, and every child would inherit that.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before pytest's ``-m`` selection: the long case matrices' rows after the first are marked slow, and
    each test is given its xdist group (see the module doc).

    pytest-xdist 3.8 names a test's group by appending "@group" to its node id, through an attribute pytest
    9 no longer reads (the id is ``Item._id`` now): the same suffix is set here, on a worker of a ``--dist
    loadgroup`` run, or the groups would silently not hold; ``real_clusters_one_worker`` fails a run in
    which they did not."""
    seen: set[str] = set()
    for item in items:
        if item.get_closest_marker("matrix") is not None:
            test = item.nodeid.split("[", 1)[0]
            if test in seen:
                item.add_marker(pytest.mark.slow)
            seen.add(test)
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                         for m in item.iter_markers("xdist_group")})
        if item.get_closest_marker("kafka"):
            groups = ["real-clusters"]
        elif item.get_closest_marker("spark"):
            groups = ["spark"]
        elif not groups:
            groups = [item.nodeid.split("::", 1)[0]]  # its module's: a module-scoped fixture is made once
        if "@" not in item.nodeid.rpartition("]")[2]:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


@pytest.fixture(autouse=True)
def real_clusters_one_worker(request, tmp_path_factory):
    """Under pytest-xdist, only one worker may run the tests marked kafka (they start real clusters, one at
    a time): the first such test a worker runs takes a lock, shared by the run's workers, for the rest of
    its session; a second worker that finds it taken fails."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None or request.node.get_closest_marker("kafka") is None or _CLUSTER_LOCK:
        yield
        return
    import fcntl

    f = open(tmp_path_factory.getbasetemp().parent / "real-clusters.lock", "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        pytest.fail(f"{worker} got a test marked kafka while another worker runs them: the xdist group did not hold")
    _CLUSTER_LOCK.append(f)
    yield


_CLUSTER_LOCK: list = []  # the lock file this worker holds, open until the worker exits


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
