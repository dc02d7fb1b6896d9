"""What the fuzz tests share: how long they run, how they damage bytes, and what they accept.

Every reader of untrusted bytes (archive files and manifests, KRaft segments and snapshots, ZooKeeper
transaction logs and snapshots, brokers' log lines) is fed valid samples made by the project's own writers
and test helpers, damaged (bits flipped, bytes set, inserted, deleted, truncated, extended, integers
overwritten with extreme values) and fully random bytes. The one thing asserted: what escapes a reader is
an error `ctrlaudit.errors.describe` turns into one line with exit 1 or 2, never a bug (exit 3:
MemoryError, IndexError, struct.error, UnicodeDecodeError, RecursionError, OverflowError, a bare ValueError).

How long: in CI each fuzz test runs a fixed number of examples, derandomized (the same inputs on every run,
so a failure reproduces), with no example database; all fuzz tests together take about a minute.
Locally, run longer and with fresh randomness:

    CTRLAUDIT_FUZZ_EXAMPLES=5000 pytest tests -k fuzz -p no:cacheprovider

which also keeps hypothesis's database of failing examples in `.hypothesis/` (git ignores it), so a
failure found once is tried first on the next run.
"""
from __future__ import annotations

import itertools
import os
import struct
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ctrlaudit.errors import EXIT_BAD_INPUT, EXIT_FOUND, describe

LONG_EXAMPLES = int(os.environ.get("CTRLAUDIT_FUZZ_EXAMPLES", "0") or 0)


def fuzz_settings(ci_examples: int) -> settings:
    """`ci_examples` derandomized examples (CI), or CTRLAUDIT_FUZZ_EXAMPLES random ones with the example
    database in .hypothesis/ (a longer local run)."""
    common: dict[str, Any] = {"deadline": None, "suppress_health_check": list(HealthCheck), "print_blob": True}
    if LONG_EXAMPLES:
        return settings(max_examples=LONG_EXAMPLES, derandomize=False, **common)
    return settings(max_examples=ci_examples, derandomize=True, database=None, **common)


def only_contract_errors(read: Callable[[], Any]) -> Any:
    """Run `read`; an exception it raises must be one the CLI says in one line with exit 1 or 2."""
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - judged below
        known = describe(exc)
        if known is None or known[1] not in (EXIT_FOUND, EXIT_BAD_INPUT):
            raise AssertionError(f"a reader let {type(exc).__name__} escape (exit 3 on the CLI):\n"
                                 + "".join(traceback.format_exception(exc))) from None
        assert "\n" not in known[0].strip(), known[0]
        return None


def archived(events: Iterable[Any], root: Path) -> None:
    """Write an import's events as `ctrlaudit import` does (chained, encoded, in hourly files): the
    values a reader let through must also fit the archive's schema."""
    from schemas.archive.writer import ArchiveWriter

    it = iter(events)
    first = next(it, None)
    if first is None:
        return
    with ArchiveWriter(root, first.cluster_id, fsync=False) as writer:
        writer.extend(itertools.chain([first], it))


# --- damage ----------------------------------------------------------------------------------------

# integers a reader must not trust: lengths, counts and offsets at the edges of their types
EXTREMES = [0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**62, 2**63 - 1]


def _zigzag_varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    n &= (1 << 64) - 1
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _encodings(n: int) -> list[bytes]:
    """`n` as the formats here write integers: big-endian 4 and 8 bytes (Kafka, ZooKeeper's jute), Avro's
    zigzag varint, and a negative too."""
    out = [_zigzag_varint(n), _zigzag_varint(-n)]
    for fmt in (">I", ">Q", ">i", ">q"):
        try:
            out.append(struct.pack(fmt, n))
        except struct.error:
            pass
    return out


_INTEGERS = st.sampled_from([b for n in EXTREMES for b in _encodings(n)])


@st.composite
def damaged(draw: st.DrawFn, base: bytes, max_edits: int = 4) -> bytes:
    """`base` with a few edits at positions hypothesis chooses (it shrinks a failure to the fewest)."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, max_edits))):
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        edit = draw(st.sampled_from(["flip", "set", "int", "insert", "delete", "truncate", "extend", "copy"]))
        if edit == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif edit == "set" and data:
            data[at] = draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, 0x01]))
        elif edit == "int":
            value = draw(_INTEGERS)
            data[at:at + len(value)] = value
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif edit == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif edit == "truncate":
            del data[at:]
        elif edit == "extend":
            data += draw(st.binary(min_size=1, max_size=64))
        elif edit == "copy" and data:  # a stretch of the file again elsewhere (a batch or record twice)
            n = draw(st.integers(1, 64))
            src = draw(st.integers(0, max(len(data) - 1, 0)))
            data[at:at] = data[src:src + n]
    return bytes(data)


def hostile(base: bytes, random_size: int = 4096) -> st.SearchStrategy[bytes]:
    """Damaged copies of `base` (mostly) and fully random bytes."""
    return st.one_of(damaged(base), damaged(base), damaged(base), st.binary(max_size=random_size))


def damage_some(data: Any, items: Iterable[Any], damage: Callable[[Any], st.SearchStrategy[Any]],
                first: int = 0) -> list[Any]:
    """The items with one to three of them (from index `first` on; one may be drawn twice) replaced by what
    `damage(item)` draws."""
    out = list(items)
    for i in data.draw(st.lists(st.integers(first, len(out) - 1), min_size=1, max_size=3)):
        out[i] = data.draw(damage(out[i]))
    return out
