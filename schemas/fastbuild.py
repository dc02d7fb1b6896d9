"""Constructors for the frozen, slotted dataclasses of the model, for the paths that build them by the
hundred thousand (the normalizer's events, the store's as-of objects).

A frozen dataclass's __init__ sets each field through object.__setattr__ (what `frozen` costs); these set
the same slots through their descriptors, in one generated function per class. The objects are the same
(==, hash, repr); only their construction is cheaper.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, TypeVar

import pyarrow as pa

try:
    from schemas import _fastbuild as _native  # type: ignore[attr-defined]  # C extension, no stubs
except ImportError:  # built without a compiler: the Python path only
    _native = None

T = TypeVar("T")


def native() -> bool:
    """The C builder (schemas/_native/fastbuild.c) is built and not turned off (CTRLAUDIT_NATIVE=0)."""
    return _native is not None and os.environ.get("CTRLAUDIT_NATIVE") != "0"


def fast_constructor(cls: type[T]) -> Callable[..., T]:
    """cls(*every field, in order) for a frozen, slotted dataclass, ~2.5x cheaper than its __init__ (which
    looks up object.__setattr__ for each field): the same stores, through the slot descriptors. Events
    are built this way on the hot path (four dataclasses per partition change, ~5 us of ~40 saved); the
    objects are the same (==, hash, repr). A field added to cls becomes a required argument here, so a
    caller that misses it fails loudly instead of leaving the slot empty."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]  # a dataclass, asserted below
    assert getattr(cls, "__slots__", None) == tuple(names) and not hasattr(cls, "__post_init__"), cls
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls,
                          **{f"_set_{n}": cls.__dict__[n].__set__ for n in names}}
    exec(f"def {cls.__name__}_({', '.join(names)}):\n    o = _new(_cls)\n"
         + "".join(f"    _set_{n}(o, {n})\n" for n in names) + "    return o\n", ns)
    built: Callable[..., T] = ns[f"{cls.__name__}_"]
    return built


_constructors: dict[type, Callable[..., Any]] = {}


def objects(cls: type[T], columns: Sequence[list[Any]], atomic: bool = False) -> list[T]:
    """[cls(*row) for row in zip(*columns)] for a frozen, slotted dataclass, one column per field in
    order (lists of one length). The C builder stores each value straight into its slot, with no call
    per field; the Python path is fast_constructor's, and the reference. `atomic`: the values cannot
    refer back to the objects (ints, strings, tuples of ints, enum members, objects built so), so the C
    builder leaves the objects out of the cyclic GC, whose next pass would otherwise walk them all."""
    new = _constructors.get(cls)
    if new is None:  # asserts cls is slotted, its slots are its fields in order, and no __post_init__
        new = _constructors[cls] = fast_constructor(cls)
    if native():
        built: list[T] = _native.objects(cls, list(columns), atomic)
        return built
    return [new(*row) for row in zip(*columns, strict=True)]


def int_tuples(column: pa.ChunkedArray | pa.Array) -> list[tuple[int, ...]]:
    """A list<int32> column as tuples, each row the values between its two offsets (a null list is its
    range, empty as Arrow writes it). The C builder reads the offsets and values buffers; a chunk it
    does not take (another item type, a sliced child, null items) and the Python path slice the values
    converted once, instead of a Python list per row."""
    out: list[tuple[int, ...]] = []
    for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]):
        values = chunk.values
        if len(values) == 0:  # adding, removing and the ELRs are empty almost everywhere
            out.extend([()] * len(chunk))
        elif native() and values.type == pa.int32() and values.offset == 0 and values.null_count == 0:
            offsets, data = chunk.buffers()[1], values.buffers()[1]
            out.extend(_native.int_tuples(offsets, data, chunk.offset, len(chunk)))
        else:
            vals, offs = values.to_pylist(), chunk.offsets.to_pylist()
            out.extend(tuple(vals[a:b]) for a, b in zip(offs, offs[1:]))
    return out
