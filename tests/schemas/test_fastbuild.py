"""schemas.fastbuild: constructors through the slots give the objects __init__ gives."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from replay.queries import PartitionRow
from schemas.events import LeaderRecoveryState, PartitionState
from schemas.fastbuild import fast_constructor


def test_the_same_objects_as_init() -> None:
    args = ((1, 2, 3), (1, 2), 1, 4, 7, (), (3,), (2,), (), LeaderRecoveryState.RECOVERING)
    built, init = fast_constructor(PartitionState)(*args), PartitionState(*args)
    assert built == init and hash(built) == hash(init) and repr(built) == repr(init)
    row = fast_constructor(PartitionRow)("t", "id", 0, built, 5, 6)
    assert row == PartitionRow("t", "id", 0, init, 5, 6)
    with pytest.raises(TypeError):
        fast_constructor(PartitionState)(*args[:-1])  # every field is required


def test_refuses_what_it_cannot_build_alike() -> None:
    @dataclass
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            assert self.a > 0

    for cls in (NoSlots, Checked):
        with pytest.raises(AssertionError):
            fast_constructor(cls)
