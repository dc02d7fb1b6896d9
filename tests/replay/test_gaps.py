"""Which partitions a gap holds, read from its reason: a broker-log import's skipped epochs of one partition and a
live ZooKeeper watch's skipped versions of one state znode hold that partition; any other gap holds every one."""
from __future__ import annotations

from replay.gaps import CaptureStretch
from schemas.gap_reasons import partition_reason, partitions_of


def test_the_partitions_a_gap_holds():
    assert partitions_of(partition_reason("orders-v2", 11, "1..2 before epoch 3 are stated whole in no log given")) == \
        (("orders-v2", 11),)
    assert partitions_of("/brokers/topics/zkscn-a/partitions/1/state: versions 6..7 changed before they were read") == \
        (("zkscn-a", 1),)
    for whole in ("history before 2026-11-29T01:46:15.892Z (the oldest line of the logs given) is not in them",
                  "/brokers/topics/zkscn-a: versions 2..3 changed before they were read",
                  "segment 00000000000000000042.log: batch at byte 120 is corrupt"):
        assert partitions_of(whole) == (), whole


def test_a_stretch_about_one_partition_holds_it_only():
    one = CaptureStretch(5, 3, 9, 100, 200, 4, 8, "log records", "t-0: partition epochs 1..1", (("t", 0),))
    every = CaptureStretch(5, 3, 9, 100, 200, 4, 8, "log records", "segment skipped")
    assert one.about("t", 0) and not one.about("t", 1) and one.names() == "t-0"
    assert every.about("t", 1) and every.names() == "every partition"
    assert one.as_json()["since_seq"] == 3 and one.as_json()["until_seq"] == 9
