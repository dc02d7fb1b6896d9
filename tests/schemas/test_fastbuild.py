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


# --- column-wise: objects() and int_tuples(), the C builder against the Python path -------------

def _random_lists(rng, n: int) -> list[list[int] | None]:
    return [None if rng.random() < 0.05 else [rng.randrange(-3, 2**31 - 1) if rng.random() < 0.1
                                              else rng.randrange(0, 12) for _ in range(rng.randrange(0, 5))]
            for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_int_tuples_equal_the_python_path_on_chunked_sliced_and_null_lists(seed, monkeypatch) -> None:
    import random

    import pyarrow as pa

    from schemas import fastbuild

    rng = random.Random(seed)
    rows = _random_lists(rng, 3000)
    column = pa.chunked_array([pa.array(rows[:1000], pa.list_(pa.int32())),
                               pa.array(rows[1000:2500], pa.list_(pa.int32())).slice(10, 1400),
                               pa.array([[]] * 20, pa.list_(pa.int32())),
                               pa.array(rows[2500:], pa.list_(pa.int32())),
                               pa.array([[1, None, 3]], pa.list_(pa.int32()))])  # a null item: Python path
    wide = pa.array(rows[2500:], pa.list_(pa.int64()))  # not taken by C: Python path
    native = fastbuild.int_tuples(column), fastbuild.int_tuples(wide)
    monkeypatch.setenv("CTRLAUDIT_NATIVE", "0")
    python = fastbuild.int_tuples(column), fastbuild.int_tuples(wide)
    # the reference: Arrow's own rows, a null list as () (Arrow writes it as an empty range)
    want = tuple([tuple(r) if r is not None else () for r in c.to_pylist()] for c in (column, wide))
    assert native == python == want
    assert all(type(t) is tuple for t in native[0])


def test_objects_equal_init_and_the_python_path(monkeypatch) -> None:
    from schemas import fastbuild

    n = 500
    cols = [[(i, i + 1, i + 2) for i in range(n)], [(i,) for i in range(n)], list(range(n)), [i * 2 for i in range(n)],
            [i * 3 for i in range(n)], [()] * n, [(7,)] * n, [()] * n, [(i % 3,) for i in range(n)],
            [LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING] * (n // 2)]
    native = fastbuild.objects(PartitionState, cols)
    monkeypatch.setenv("CTRLAUDIT_NATIVE", "0")
    python = fastbuild.objects(PartitionState, cols)
    init = [PartitionState(*row) for row in zip(*cols)]
    assert native == python == init
    assert [hash(x) for x in native] == [hash(x) for x in init] and repr(native[3]) == repr(init[3])
    assert native[7].replicas is cols[0][7]  # the values themselves, not copies
    monkeypatch.delenv("CTRLAUDIT_NATIVE")
    rows = fastbuild.objects(PartitionRow, [["t"] * n, ["id"] * n, list(range(n)), native, [5] * n, [6] * n])
    del native, cols  # the objects own their values: nothing freed under them
    assert rows[499] == PartitionRow("t", "id", 499, init[499], 5, 6)


def test_objects_refuses_columns_that_do_not_fit_the_class() -> None:
    from schemas import fastbuild

    @dataclass
    class NoSlots:
        a: int

    with pytest.raises(AssertionError):
        fastbuild.objects(NoSlots, [[1]])
    with pytest.raises((TypeError, ValueError)):
        fastbuild.objects(PartitionRow, [["t"], ["id"], [0], [None], [5]])  # a column short
    with pytest.raises((TypeError, ValueError)):
        fastbuild.objects(PartitionRow, [["t"], ["id"], [0, 1], [None], [5], [6]])  # lengths differ


def test_the_c_builder_is_built_where_the_native_decoders_are() -> None:
    """`pip install -e .` builds all three extensions alike: where the archive decoder is built (CI, this
    venv), the as-of builder must be too, or state_as_of would silently take the slower path."""
    from schemas import fastbuild
    from schemas.archive import fastflat

    if not fastflat.available():
        pytest.skip("no native extension built here")
    assert fastbuild.native()


def test_atomic_objects_and_int_tuples_are_left_out_of_the_cyclic_gc_and_stay_alive() -> None:
    import gc

    import pyarrow as pa

    from schemas import fastbuild

    if not fastbuild.native():
        pytest.skip("the C builder is not built")
    tuples = fastbuild.int_tuples(pa.array([[1, 2], [3]], pa.list_(pa.int32())))
    states = fastbuild.objects(PartitionState, [[t] for t in (tuples[0], tuples[1], 1, 2, 3, (), (), (), (),
                                                              LeaderRecoveryState.RECOVERED)], atomic=True)
    rows = fastbuild.objects(PartitionRow, [["t"], ["id"], [0], states, [5], [6]], atomic=True)
    tracked = fastbuild.objects(PartitionRow, [["t"], ["id"], [0], states, [5], [6]])
    assert not any(gc.is_tracked(x) for x in (*tuples, *states, *rows)) and gc.is_tracked(tracked[0])
    del tuples, states
    gc.collect()
    assert rows[0].state.replicas == (1, 2) and rows[0] == tracked[0]
