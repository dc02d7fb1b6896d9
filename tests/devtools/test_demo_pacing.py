"""The demo's pacing: before each next step it waits until the archive shows what kafka-topics --describe
showed (devtools.demo_kafka._capture_shows), so a lagging ZooKeeper watch cannot skip the version at a mark."""
from __future__ import annotations

from devtools.demo_kafka import _capture_shows
from devtools.cluster.observe import Described, DescribedPartition
from tests.archive_files import write_archive_file
from tests.replay.fixtures import CLUSTER, DELTA1


def _archive(tmp_path, upto: int):
    d = tmp_path / f"archive-{upto}"
    if d.exists():
        return d
    (d / CLUSTER).mkdir(parents=True)
    write_archive_file(d / CLUSTER / "events-0.avro", DELTA1[:upto + 1])
    return d


def _described(*parts: tuple[str, int, int, tuple, tuple]) -> Described:
    return Described(partitions={(t, p): DescribedPartition(t, p, leader, replicas, isr)
                                 for t, p, leader, replicas, isr in parts})


def test_the_archive_shows_a_state_only_once_every_partition_reached_it(tmp_path):
    shrunk = _described(("orders", 0, 1, (1, 2, 3), (1, 2)), ("orders", 1, 2, (2, 3, 1), (2, 3, 1)),
                        ("other", 0, 5, (5,), (5,)))  # another topic's partitions are not compared
    assert not _capture_shows(_archive(tmp_path, 9), "orders", shrunk)   # orders-0's ISR shrink not archived yet
    assert _capture_shows(_archive(tmp_path, 10), "orders", shrunk)
    assert _capture_shows(_archive(tmp_path, 10), "orders", _described(  # the ISR's order is describe's own
        ("orders", 0, 1, (1, 2, 3), (2, 1)), ("orders", 1, 2, (2, 3, 1), (1, 2, 3))))
    assert not _capture_shows(_archive(tmp_path, 11), "orders", shrunk)  # the archive is ahead: leader 2 now
    assert not _capture_shows(_archive(tmp_path, 10), "orders", _described(("orders", 0, 1, (1, 2, 3), (1, 2))))


def test_a_topic_describe_does_not_show_is_never_caught_up(tmp_path):
    # audit deleted at seq 18: the archive holds none of its partitions, and an empty describe is no answer
    assert not _capture_shows(_archive(tmp_path, 19), "audit", _described())
    assert not _capture_shows(_archive(tmp_path, 19), "audit", _described(("audit", 0, 3, (3, 1), (3, 1))))
    assert _capture_shows(_archive(tmp_path, 13), "audit", _described(("audit", 0, 3, (3, 1), (3, 1))))
    assert not _capture_shows(tmp_path / "nothing-yet", "orders", _described(("orders", 0, 1, (1,), (1,))))
