"""Several nodes' copies of the metadata log, one verdict (services.kraft.agreement, `ctrlaudit import kraft` given
each node's directory): copies that agree on the batches they share are imported once; the same offset and epoch
with other bytes is a divergence named by node, offset and both batches; a deposed leader's uncommitted tail is
not imported, and said. Real clusters: tests/services/kraft/test_real_agreement.py."""
from __future__ import annotations

import shutil

import pytest

from schemas.archive.container import read_events
from services.kraft.agreement import compare, node_copies
from services.kraft.batch import build_batch
from services.normalize.imports import BadImport
from tests.ctrlaudit.test_bad_inputs import ctrlaudit
from tests.services.kraft.helpers import TOPIC_ID, metadata_value, pcr

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _batches(last_epoch: int = 2, isr: tuple[int, ...] = (1, 2)) -> list[bytes]:
    """A topic and its partition (epoch 1), an ISR change (epoch 1), a leader change (`last_epoch`)."""
    topic = metadata_value("TopicRecord", 0, {"name": "t", "topicId": TOPIC_ID})
    part = metadata_value("PartitionRecord", 0, {
        "partitionId": 0, "topicId": TOPIC_ID, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [],
        "addingReplicas": [], "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0})
    return [build_batch([(None, topic), (None, part)], base_offset=0, leader_epoch=1, timestamp=1000),
            build_batch([(None, pcr(0, isr=list(isr)))], base_offset=2, leader_epoch=1, timestamp=1001),
            build_batch([(None, pcr(0, leader=2))], base_offset=3, leader_epoch=last_epoch, timestamp=1002)]


def _copy(tmp_path, node: int, batches: list[bytes]):
    root = tmp_path / f"node{node}"
    d = root / "__cluster_metadata-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    (root / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER}\nnode.id={node}\n")
    return d


def test_copies_that_agree_are_imported_once_from_the_one_reaching_furthest(tmp_path):
    full = _batches()
    dirs = [_copy(tmp_path, 1, full[:2]), _copy(tmp_path, 2, full), _copy(tmp_path, 3, full)]
    agreed = compare(node_copies(dirs))
    assert agreed.chosen.node == 2 and agreed.shared == 2 + 2 + 3 and not agreed.stale_tails
    done = ctrlaudit("import", "kraft", *map(str, dirs), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "3 copies of the metadata log (nodes 1, 2, 3) agree" in done.stdout and "from node 2" in done.stdout
    alone = ctrlaudit("import", "kraft", str(dirs[1]), "--out", str(tmp_path / "alone"))
    assert alone.returncode == 0, alone.stderr
    def events(out):
        return [(e.seq, e.event_id, e.payload) for f in sorted(out.rglob("*.avro")) for e in read_events(f)]
    assert events(tmp_path / "out") == events(tmp_path / "alone") != []


def test_the_same_offset_and_epoch_with_other_records_is_a_divergence_named_by_node_and_offset(tmp_path):
    """Node 3's batch at offset 2 re-framed with another ISR and a valid CRC: Raft's log matching is broken."""
    planted = _batches(isr=(1, 3))
    dirs = [_copy(tmp_path, 1, _batches()), _copy(tmp_path, 3, planted)]
    with pytest.raises(BadImport, match=r"diverge at offset 2: node 1 has batch 2\.\.2 epoch 1 crc [0-9a-f]{8} "
                                        r".*node 3 has batch 2\.\.2 epoch 1 crc"):
        compare(node_copies(dirs))
    done = ctrlaudit("import", "kraft", *map(str, dirs), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("ctrlaudit: error: ") and "offset 2" in line and "node 3" in line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.avro"))


def test_a_deposed_leaders_uncommitted_tail_is_not_imported_and_said(tmp_path):
    """Node 3 holds offset 3 written in epoch 1; nodes 1 and 2 hold epoch 2's batch there: a later leader wrote
    over node 3's uncommitted tail."""
    dirs = [_copy(tmp_path, 1, _batches()), _copy(tmp_path, 2, _batches()), _copy(tmp_path, 3, _batches(last_epoch=1))]
    agreed = compare(node_copies(dirs))
    assert agreed.stale_tails == {3: (3, 1, 2)} and agreed.chosen.node == 1
    assert any("node 3: an uncommitted tail from offset 3 (epoch 1)" in line for line in agreed.lines())


def test_a_lower_epoch_that_agreement_follows_again_is_no_tail_but_a_divergence(tmp_path):
    ours = _batches()
    theirs = list(ours)
    theirs[1] = build_batch([(None, pcr(0, isr=[1, 3]))], base_offset=2, leader_epoch=0, timestamp=1001)
    dirs = [_copy(tmp_path, 1, ours), _copy(tmp_path, 2, theirs)]
    with pytest.raises(BadImport, match="diverge at offset 2"):
        compare(node_copies(dirs))


def test_one_nodes_files_however_given_are_one_copy(tmp_path):
    d = _copy(tmp_path, 1, _batches())
    assert node_copies([d]) is None and node_copies([d, d]) is None
    other = tmp_path / "again" / "__cluster_metadata-0"
    other.parent.mkdir()
    shutil.copytree(d, other)
    shutil.copy(d.parent / "meta.properties", other.parent / "meta.properties")
    with pytest.raises(BadImport, match="two copies of node 1"):
        node_copies([d, other])


def test_copies_of_different_clusters_are_one_line(tmp_path):
    dirs = [_copy(tmp_path, 1, _batches()), _copy(tmp_path, 2, _batches())]
    (dirs[1].parent / "meta.properties").write_text("version=1\ncluster.id=OtherClusterAAAAAAAAAAA\nnode.id=2\n")
    done = ctrlaudit("import", "kraft", *map(str, dirs), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    [line] = done.stderr.strip().splitlines()
    assert "different clusters" in line and "node 2: OtherClusterAAAAAAAAAAA" in line, line
