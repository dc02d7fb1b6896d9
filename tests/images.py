"""The oracle of the one-image tests: the fold of the events a maker emitted, and the comparison of two images."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from schemas.archive.chain import Chain
from schemas.events import ControllerEvent
from schemas.state.delta import fold
from schemas.state.image import ClusterImage


def folded(events: list[ControllerEvent], on_error: Callable[..., Any] | None = None) -> ClusterImage:
    """The image `fold` makes of the events, chained as an archive would hold them."""
    chain = Chain(events[0].cluster_id)
    chained = [chain.append(replace(e)) for e in events]
    return fold(chained) if on_error is None else fold(chained, on_error=on_error)


def assert_same_state(a: ClusterImage, b: ClusterImage) -> None:
    assert a.partitions == b.partitions and a.topic_names == b.topic_names
    assert dict(a.brokers) == dict(b.brokers)
    assert {k: dict(v) for k, v in a.configs.items()} == {k: dict(v) for k, v in b.configs.items()}
    assert dict(a.features) == dict(b.features) and a.controller == b.controller
