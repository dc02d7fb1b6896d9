"""services/capture/stall.py: when an archiver without partitions rejoins its group, and when not."""
from __future__ import annotations

from services.capture.stall import Stall, lagging


class _Probe:
    """Answers the probes in turn (None: the group's offsets could not be read)."""

    def __init__(self, *answers):
        self.answers, self.calls = list(answers), 0

    def __call__(self):
        self.calls += 1
        return self.answers.pop(0)


def _feed(stall: Stall, probe, times, assigned=False) -> list[bool]:
    return [stall.stalled(t, assigned, probe) for t in times]


def test_lag_means_events_past_the_committed_offset_and_the_low_watermark():
    assert lagging({0: (5, 0, 9)})
    assert lagging({0: (-1001, 0, 1)})  # nothing committed, one event
    assert not lagging({0: (9, 0, 9), 1: (-1001, 0, 0)})
    assert not lagging({0: (-1001, 7, 7)})  # retention removed every event


def test_offsets_left_behind_the_end_for_the_whole_wait_rejoin():
    stuck = {0: (3, 0, 40), 1: (-1001, 0, 2)}
    probe = _Probe(stuck, stuck)
    assert _feed(Stall(10), probe, [0, 5, 9.9, 10]) == [False, False, False, True]
    assert probe.calls == 2  # once when first seen without partitions, then once per wait


def test_a_standby_whose_group_is_being_served_never_rejoins():
    probe = _Probe(*({0: (c, 0, c + 50)} for c in range(0, 1000, 100)))
    assert not any(_feed(Stall(10), probe, range(0, 100, 10)))


def test_a_group_with_nothing_to_archive_never_rejoins():
    caught_up = {0: (40, 0, 40)}
    probe = _Probe(*[caught_up] * 10)
    assert not any(_feed(Stall(10), probe, range(0, 100, 10)))


def test_an_unreadable_group_rejoins_after_two_probes_a_wait_apart():
    probe = _Probe(None, {0: (3, 0, 9)}, None, None)
    assert _feed(Stall(10), probe, [0, 10, 20, 30]) == [False, False, False, True]


def test_partitions_assigned_reset_the_wait():
    stuck = {0: (3, 0, 40)}
    probe = _Probe(stuck, stuck, stuck)
    stall = Stall(10)
    assert _feed(stall, probe, [0, 5]) == [False, False]
    assert stall.stalled(8, True, probe) is False  # assigned: starts over
    assert _feed(stall, probe, [9, 18, 19]) == [False, False, True]


def test_a_settled_group_where_nobody_holds_the_partitions_rejoins_after_the_short_wait():
    stuck = {0: (-1001, 0, 40)}
    probe, served = _Probe(*[stuck] * 5), _Probe(False, False)
    stall = Stall(60, unserved_after=10)
    assert [stall.stalled(t, False, probe, served) for t in (0, 5, 9.9, 10)] == [False, False, False, True]
    assert served.calls == 1


def test_nobody_holding_nothing_to_read_waits():
    caught_up = {0: (40, 0, 40)}
    probe, served = _Probe(*[caught_up] * 10), _Probe(*[False] * 10)
    stall = Stall(60, unserved_after=10)
    assert not any(stall.stalled(t, False, probe, served) for t in range(0, 60, 10))


def test_a_held_or_rebalancing_or_unanswered_group_waits_for_the_long_wait():
    stuck = {0: (3, 0, 40)}
    for answer in (True, None):
        probe, served = _Probe(*[stuck] * 10), _Probe(*[answer] * 10)
        stall = Stall(30, unserved_after=10)
        assert [stall.stalled(t, False, probe, served) for t in (0, 10, 20, 30)] == [False, False, False, True]
        assert probe.calls == 2  # the short wait's probe is only asked when nobody holds the partitions
