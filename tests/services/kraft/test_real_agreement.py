"""On real clusters (Kafka 4.x and 3.9, a 3-node cluster of this module's own): after kill -9 of a
broker and of the active controller (failovers), the copies of all three nodes' metadata logs agree batch by
batch and `ctrlaudit import kraft` imports them once, the events those of the copy reaching furthest alone; a
divergence planted in one copy (a record's byte changed, the batch re-framed with a valid CRC) is named by node
and offset, and nothing is imported."""
from __future__ import annotations

import struct

import pytest

from devtools.cluster import observe
from devtools.cluster.testing import copy_node_metadata, java_available, running_cluster
from schemas.archive.container import read_events
from services.kraft.agreement import compare, node_copies
from services.kraft.batch import read_batch
from services.kraft.crc import crc32c
from services.kraft.files import metadata_files, segment_base_offset
from tests.ctrlaudit.test_bad_inputs import ctrlaudit

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TOPIC = "ag-chaos"


@pytest.fixture(scope="module", params=["4.x", "3.9"])
def own_cluster(tmp_path_factory, request):
    """A cluster of this module's own, with Kafka's default metadata segments. A follower appends what one fetch
    brings whole, and the session's shared cluster has 4 KiB segments: a node restarted after the failovers here
    has more than that to catch up on when the shared cluster holds many partitions (the fencing of a broker that
    led them), and stops with RecordBatchTooLargeException, as would every module's restart after it."""
    if not java_available():
        pytest.skip("needs java and mvn")
    with running_cluster(tmp_path_factory.mktemp(f"agree-cluster-{request.param}"), request.param,
                         overrides={"auto.leader.rebalance.enable": "false"}) as c:
        c.label = request.param
        yield c


@pytest.fixture(scope="module")
def copies(own_cluster, tmp_path_factory):
    c = own_cluster
    work = tmp_path_factory.mktemp(f"agree-{c.label}")
    c.create_topic(TOPIC, 6, 3)
    observe.wait_describe(c, lambda d: (TOPIC, 5) in d.partitions and observe.in_sync(d, TOPIC), timeout=90)
    for _ in range(2):  # kill -9 the active controller twice: two failovers, each node back afterwards
        active = c.wait_for_controller()
        c.kill_node(active)
        c.wait_for_controller(exclude=active, timeout=60)
        c.start_node(active)
        c.wait_ready([active], timeout=180)
    broker = next(n for n in sorted(c.nodes) if n != c.wait_for_controller())
    c.kill_node(broker)  # and a broker (a voter too), restarted
    c.start_node(broker)
    c.wait_ready([broker], timeout=180)
    observe.wait_describe(c, lambda d: observe.in_sync(d, TOPIC), timeout=180)
    return work, [copy_node_metadata(c, n, work / "copies") for n in sorted(c.nodes)]


def _events(out):
    return [(e.seq, e.event_id, e.payload) for f in sorted(out.rglob("*.avro")) for e in read_events(f)]


def test_all_nodes_copies_agree_and_are_imported_once(copies, tmp_path):
    work, dirs = copies
    agreed = compare(node_copies(dirs))
    assert len(agreed.copies) == 3 and agreed.shared > 0 and not agreed.stale_tails, agreed.lines()
    done = ctrlaudit("import", "kraft", *map(str, dirs), "--out", str(tmp_path / "all"))
    assert done.returncode == 0, done.stderr
    assert "3 copies of the metadata log" in done.stdout and "agree" in done.stdout
    alone = ctrlaudit("import", "kraft", str(agreed.chosen.directory), "--node-id", str(agreed.chosen.node),
                      "--out", str(tmp_path / "alone"))
    assert alone.returncode == 0, alone.stderr
    assert _events(tmp_path / "all") == _events(tmp_path / "alone") != []


def _plant(directory) -> int:
    """Change one byte of the last record of a data batch in the middle of the oldest segment and give the batch
    a valid CRC again: the copy still reads, but holds another record there. Its base offset."""
    seg = min((f for f in metadata_files(directory) if segment_base_offset(f) is not None),
              key=lambda f: segment_base_offset(f) or 0)
    buf = bytearray(seg.read_bytes())
    batches, pos = [], 0
    while pos < len(buf):
        b = read_batch(buf, pos, str(seg), limit=len(buf))
        if not b.is_control:
            batches.append(b)
        pos = b.end_position
    b = batches[len(batches) // 2]
    buf[b.end_position - 1] ^= 0x01  # the last record's last byte (a value's or a tagged field's)
    buf[b.position + 17:b.position + 21] = struct.pack(">I", crc32c(bytes(buf[b.position + 21:b.end_position])))
    seg.write_bytes(bytes(buf))
    return b.base_offset


def test_a_divergence_planted_in_one_copy_is_named(copies, tmp_path):
    import shutil

    work, dirs = copies
    planted = tmp_path / "planted"
    shutil.copytree(dirs[-1].parent, planted)
    offset = _plant(planted / "__cluster_metadata-0")
    given = [*map(str, dirs[:-1]), str(planted / "__cluster_metadata-0")]
    done = ctrlaudit("import", "kraft", *given, "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    node = int(dirs[-1].parent.name.removeprefix("node"))
    assert f"diverge at offset {offset}:" in line and f"node {node} has batch {offset}.." in line, line
    assert not any((tmp_path / "out").rglob("*.avro"))
