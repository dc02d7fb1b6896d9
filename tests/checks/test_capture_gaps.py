"""A finding whose evidence rests on a stretch nobody read (a CaptureGap's stretch, replay.gaps) is "no data",
not a violation: on both engines, for a gap of every partition and for a gap of one partition's state only
(which leaves every other partition's findings standing)."""
from __future__ import annotations

import pytest

from checks.run import check
from schemas.gap_reasons import partition_reason
from schemas.events import CaptureGap
from tests.checks.histories import K, baseline


def _epoch_back(h, topic: str, p: int) -> int:
    """A change of `topic`-`p` whose leader epoch is lower than the one before it: leader_epoch_monotonic."""
    cur = h.parts[(topic, p)]
    return h.change(topic, p, (K.ISR,), before=cur, isr=cur.isr, leader_epoch=cur.leader_epoch - 1)


def _history(cluster: str, gap: str):
    h = baseline(cluster)
    for topic, p in (("t", 0), ("t", 1)):  # two epochs up, so that one back is still >= 0
        for _ in range(2):
            cur = h.parts[(topic, p)]
            h.change(topic, p, (K.LEADER,), leader=cur.leader, leader_epoch=cur.leader_epoch + 1)
    if gap == "every partition":
        h.gap()
    else:  # the broker-log import's gap found late: t-0's epochs were skipped
        h._emit(CaptureGap(-1, -1, partition_reason("t", 0, "3..4 before epoch 5 are stated whole in no log given")))
    _epoch_back(h, "t", 0)
    _epoch_back(h, "t", 1)
    return h


def _verdict(report, name: str) -> tuple[str, int, int]:
    r = next(r for r in report.results if r.invariant.name == name)
    return r.status, r.violations, r.in_gaps


@pytest.mark.parametrize("gap", ["every partition", "one partition"])
def test_findings_resting_on_a_stretch_nobody_read_are_no_data(tmp_path, gap):
    h = _history("c1", gap)
    path = h.write(tmp_path / "a.avro")
    report = check([str(path)], invariants=["leader_epoch_monotonic"])
    status, violations, in_gaps = _verdict(report, "leader_epoch_monotonic")
    if gap == "every partition":  # both changes rest on it
        assert (status, violations, in_gaps) == ("no data", 0, 2)
    else:  # t-1's change does not: it stays a violation
        assert (status, violations, in_gaps) == ("fail", 1, 1)
        example = next(r for r in report.results if r.invariant.name == "leader_epoch_monotonic").examples[0]
        assert example["event"]["partition"].startswith("t-1"), example
    chain = report.to_json()["chains"][0]
    assert len(chain["not_read"]) == 1 and "gap event seq" in chain["not_read"][0], chain


def test_a_finding_before_the_stretch_stays_a_violation(tmp_path):
    """The stretch starts after the last event read before it: a violation fully before it is judged."""
    h = baseline("c1")
    for _ in range(2):
        cur = h.parts[("t", 0)]
        h.change("t", 0, (K.LEADER,), leader=cur.leader, leader_epoch=cur.leader_epoch + 1)
    _epoch_back(h, "t", 0)
    h.change("t", 0, (K.ISR,), isr=h.parts[("t", 0)].isr)
    h.gap()
    report = check([str(h.write(tmp_path / "a.avro"))], invariants=["leader_epoch_monotonic"])
    assert _verdict(report, "leader_epoch_monotonic") == ("fail", 1, 0)


@pytest.mark.spark
@pytest.mark.parametrize("gap", ["every partition", "one partition"])
def test_spark_judges_the_stretches_as_duckdb_does(spark, tmp_path, gap):
    h = _history("c1", gap)
    path = h.write(tmp_path / "a.avro")
    duck = check([str(path)], invariants=["leader_epoch_monotonic"])
    sparked = check([str(path)], engine="spark", spark=spark, invariants=["leader_epoch_monotonic"])
    assert _verdict(sparked, "leader_epoch_monotonic") == _verdict(duck, "leader_epoch_monotonic")
    assert sparked.to_json()["chains"] == duck.to_json()["chains"]



def test_only_the_first_change_after_a_whole_stretch_rests_on_it(tmp_path):
    """After a stretch of every partition, a partition's first change compares with a state from before it;
    its next change compares two states read after it, and is judged."""
    h = _history("c1", "every partition")
    cur = h.parts[("t", 0)]
    h.change("t", 0, (K.LEADER,), leader=cur.leader, leader_epoch=cur.leader_epoch + 3)
    _epoch_back(h, "t", 0)
    report = check([str(h.write(tmp_path / "a.avro"))], invariants=["leader_epoch_monotonic"])
    assert _verdict(report, "leader_epoch_monotonic") == ("fail", 1, 2)
