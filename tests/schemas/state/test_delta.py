"""The builder is only an optimisation: it must equal the fold of `apply`, in any batching
(Kafka's RecordTestUtils.replayAllBatches / TopicsImageTest batch-split pattern)."""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import pytest
from hypothesis import given, settings, strategies as st

from schemas.events import PartitionChange, PartitionChangeKind as K
from schemas.state.apply import replay
from schemas.state.delta import ImageBuilder, fold
from schemas.state.errors import ReplayError
from schemas.state.image import EMPTY
from tests.replay.fixtures import DELTA1, IMAGE1, O0_MOVED, O0_SHRUNK, ORDERS, ev
from tests.replay.histories import generate


@lru_cache(maxsize=None)
def history(seed: int, n: int = 600):
    return tuple(generate(n, seed=seed))


def test_fold_of_delta1_gives_image1():
    assert fold(DELTA1) == IMAGE1


def test_every_split_of_delta1():
    # Every single split point, and every batch size, like RecordTestUtils does for small deltas.
    for cut in range(len(DELTA1) + 1):
        mid = ImageBuilder().replay_all(DELTA1[:cut]).apply()
        assert ImageBuilder(mid).replay_all(DELTA1[cut:]).apply() == IMAGE1
    for size in range(1, len(DELTA1) + 1):
        image = EMPTY
        for i in range(0, len(DELTA1), size):
            image = ImageBuilder(image).replay_all(DELTA1[i:i + size]).apply()
        assert image == IMAGE1


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 30))
def test_fold_equals_repeated_apply(seed):
    events = history(seed)
    assert fold(events) == replay(events)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 30), data=st.data())
def test_batch_split_invariance(seed, data):
    events = history(seed)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=12)))
    image = EMPTY
    start = 0
    for cut in cuts + [len(events)]:
        image = ImageBuilder(image).replay_all(events[start:cut]).apply()
        start = cut
    assert image == fold(events)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 30), k=st.integers(0, 599))
def test_prefix_images_agree(seed, k):
    events = history(seed)
    assert fold(events[:k]) == replay(events[:k])


def test_builder_refuses_what_apply_refuses():
    stale = replace(O0_SHRUNK, leader_epoch=4)
    bad = ev(11, PartitionChange("orders", ORDERS, 0, stale, O0_MOVED, (K.LEADER,)))
    base = replay(DELTA1[:11])
    messages = []
    for run in (lambda: replay([bad], base), lambda: ImageBuilder(base).replay(bad)):
        with pytest.raises(ReplayError) as info:
            run()
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "before.leader_epoch=4 but image has 0" in messages[0]


def test_builder_on_error_matches_apply_on_error():
    stale = replace(O0_SHRUNK, leader_epoch=4)
    events = list(DELTA1[:11]) + [ev(11, PartitionChange("orders", ORDERS, 0, stale, O0_MOVED, (K.LEADER,)))] \
        + list(DELTA1[12:])
    seen_a, seen_b = [], []
    a = replay(events, on_error=lambda exc, e: seen_a.append(exc.seq))
    b = fold(events, on_error=lambda exc, e: seen_b.append(exc.seq))
    assert a == b == IMAGE1
    assert seen_a == seen_b == [11]


def test_empty_builder_returns_base():
    assert ImageBuilder(IMAGE1).apply() is IMAGE1


def test_a_request_logs_gap_is_not_a_gap_of_the_state_a_state_gap_is():
    from schemas.events import CaptureGap, SourceKind, SourcePosition

    n = len(DELTA1)
    gap = ev(n, CaptureGap(7, 9, "kafka-request.log: 3 lines, 7 to 9 not read: a line cut short"))
    of_requests = replace(gap, source=SourcePosition(SourceKind.REQUEST_LOG, 5, -1, 1, None, "kafka-request.log", 7))
    for events in ([*DELTA1, of_requests], [*DELTA1, gap]):
        assert fold(events) == replay(events)  # the delta and the pure apply alike
    assert fold([*DELTA1, of_requests]).gaps == IMAGE1.gaps and len(fold([*DELTA1, gap]).gaps) == len(IMAGE1.gaps) + 1
    assert replace(fold([*DELTA1, of_requests]), provenance=IMAGE1.provenance) == IMAGE1
