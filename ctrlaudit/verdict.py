"""A `ctrlaudit check --json` report read back by `ctrlaudit report --check-json`.

The file is untrusted input (a copy from an incident, a report of another cluster, a hand-made one), so
`read` checks the type of every field the report uses and keeps only those: anything else is one
UsageError naming the file and the field. `bind` then relates the verdict to the history reported on,
by what the check's `chains` state (checks/inputs.py `chain_summary`: per cluster the seq range judged and
the chain's hash at its last seq, which commits to every event before it):

- a check of another cluster, or of another history of this cluster (another hash at that seq: a fork,
  a rewritten history), is refused: its verdict is not this history's;
- a check that does not state what it judged (an older ctrlaudit, a hand-made file), or that judged past
  the end of this store, is shown labelled "verdict not bound to this history";
- a check that covers only part of the window, had unverified stretches in it, or judged other clusters
  as well, is labelled so.
"""
from __future__ import annotations

import builtins
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from checks.report import ALLOWED, FAIL, NO_DATA, PASS, WARN
from ctrlaudit.errors import UsageError
from schemas.bounded import read_or_refuse

# A real check report is kilobytes (a few examples per invariant, a few lines per cluster); parsing a
# crafted one of this size (all empty lists) takes about 200 MB
MAX_BYTES = 8 << 20
MAX_ITEMS = 100_000  # entries of any list or object
MAX_TEXT = 1 << 20  # characters of any string
INT64 = (-(1 << 63), (1 << 63) - 1)
SEQ = (0, INT64[1])
COUNT = (0, INT64[1])
TIME_MS = (-62135596800000, 253402300799999)  # what a date can show: years 1..9999
STATUSES = (PASS, FAIL, ALLOWED, NO_DATA, WARN)
HASH = re.compile(r"[0-9a-f]{64}")
UNBOUND = "verdict not bound to this history"


class Malformed(UsageError):
    """A --check-json file that is not a check report: one line naming the file and the field."""


# --- what `read` and `shape` keep of a report: the fields the page uses, each of a checked type ---

Scalar = str | int | float | bool | None  # an example's expected/actual value


class ExampleEvent(TypedDict):
    event_time_ms: int | None
    partition: str
    change: str
    event_id: str | None


class Example(TypedDict):
    cluster_id: str | None  # None: a report of an older ctrlaudit, without cluster ids
    seq: int
    rule: str | None
    expected: Scalar
    actual: Scalar
    magnitude: int | None
    event: ExampleEvent | None


class Invariant(TypedDict):
    name: str
    status: str  # one of STATUSES
    violations: int
    allowed: int
    rules: dict[str, int]  # rule -> findings
    magnitude_by_rule: dict[str, int]
    examples: list[Example]
    allowed_examples: list[Example]
    pending: NotRequired[int]  # a bounded-liveness check's obligations open at the end of the history


class ChainGap(TypedDict):
    from_seq: int
    to_seq: int
    reason: str


class ChainSummary(TypedDict):
    """What a check judged of one cluster (checks/inputs.py `chain_summary`)."""

    cluster_id: str
    last_seq: int
    first_seq: NotRequired[int]  # first_seq and head_hash: both or neither (a report that does not bind)
    head_hash: NotRequired[str]
    gaps: list[ChainGap]


class CheckReport(TypedDict):
    invariants: list[Invariant]
    clusters: list[str]
    inputs: list[str]
    chains: list[ChainSummary] | None  # None: the report does not say what it judged


@dataclass(frozen=True)
class Verdict:
    """A check report (the fields the page uses, validated) and how it relates to the history shown."""

    checks: CheckReport
    bound: bool  # the check judged this history: same cluster, same chain hash at its last seq
    notes: tuple[tuple[str, str], ...] = ()  # (label, detail) shown with the verdict: not bound, part of the window


# --- shape ----------------------------------------------------------------------------------------

class _Fields:
    """Type checks of one file's fields; every failure names the file and the field's path."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, at: str, what: str) -> Malformed:
        return Malformed(f"{self.where}: not a `ctrlaudit check --json` report: {at}: {what}")

    def obj(self, v: Any, at: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(at, f"expected an object, found {_kind(v)}")
        if len(v) > MAX_ITEMS:
            raise self.fail(at, f"more than {MAX_ITEMS:,} fields")
        return v

    def items(self, v: Any, at: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(at, f"expected a list, found {_kind(v)}")
        if len(v) > MAX_ITEMS:
            raise self.fail(at, f"more than {MAX_ITEMS:,} entries")
        return v

    def text(self, v: Any, at: str) -> str:
        if not isinstance(v, str):
            raise self.fail(at, f"expected a string, found {_kind(v)}")
        if len(v) > MAX_TEXT:
            raise self.fail(at, f"a string of more than {MAX_TEXT:,} characters")
        return v

    def opt_text(self, v: Any, at: str) -> str | None:
        return None if v is None else self.text(v, at)

    def int(self, v: Any, at: str, bounds: tuple[int, int] = INT64) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(at, f"expected an integer, found {_kind(v)}")
        if not bounds[0] <= v <= bounds[1]:
            raise self.fail(at, f"{_short(v)} is out of range ({bounds[0]}..{bounds[1]})")
        return v

    # `int` is the method above from here on in the class body: the type is builtins.int
    def opt_int(self, v: Any, at: str, bounds: tuple[builtins.int, builtins.int] = INT64) -> builtins.int | None:
        return None if v is None else self.int(v, at, bounds)

    def scalar(self, v: Any, at: str) -> Scalar:
        """An example's expected/actual: shown as text."""
        if v is None or isinstance(v, (bool, str)):
            return self.text(v, at) if isinstance(v, str) else v
        if isinstance(v, int):
            return self.int(v, at)
        if isinstance(v, float) and math.isfinite(v):
            return v
        raise self.fail(at, f"expected a string or a number, found {_kind(v)}")

    def counts(self, v: Any, at: str) -> dict[str, builtins.int]:
        return {self.text(k, f"{at} key"): self.int(n, f"{at}.{_short(k)}", COUNT)
                for k, n in self.obj(v, at).items()}


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(v), type(v).__name__)


def _short(v: Any) -> str:
    text = repr(v) if isinstance(v, str) else str(v)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"


def _names(values: list[str], most: int = 5) -> str:
    """Names from the file, for a message: the first few, each cut to a readable length."""
    shown = [v if len(v) <= 80 else f"{v[:60]}…({len(v)} characters)" for v in values[:most]]
    return ", ".join(shown) + (f" and {len(values) - most} more" if len(values) > most else "")


def _no_constant(name: str) -> float:  # json's parse_constant: what would stand for NaN or Infinity
    raise ValueError(f"{name} is not a JSON number")


def read(path: Path) -> CheckReport:
    """The check report in `path`, the fields the page uses, validated; Malformed otherwise."""
    where = str(path)
    data = read_or_refuse(path, MAX_BYTES, "a check report", Malformed)
    try:
        raw = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise Malformed(f"{where}: not a `ctrlaudit check --json` report: not UTF-8 at byte {exc.start}") from None
    except ValueError as exc:  # JSONDecodeError names line and column; also a number too long to read
        raise Malformed(f"{where}: not a `ctrlaudit check --json` report: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise Malformed(f"{where}: not a `ctrlaudit check --json` report: nested too deeply") from None
    return shape(raw, where)


def shape(raw: Any, where: str) -> CheckReport:
    """The fields of a check report (as parsed from JSON) that the page uses, validated; Malformed
    naming `where` and the field otherwise."""
    f = _Fields(where)
    top = f.obj(raw, "the document")
    if "invariants" not in top:
        raise f.fail("invariants", "missing")
    invariants = [_invariant(x, f"invariants[{i}]", f) for i, x in enumerate(f.items(top["invariants"], "invariants"))]
    clusters = [f.text(c, f"clusters[{i}]") for i, c in enumerate(f.items(top.get("clusters", []), "clusters"))]
    inputs = [f.text(c, f"inputs[{i}]") for i, c in enumerate(f.items(top.get("inputs", []), "inputs"))]
    chains = None if "chains" not in top else [
        _chain(c, f"chains[{i}]", f) for i, c in enumerate(f.items(top["chains"], "chains"))]
    return {"invariants": invariants, "clusters": clusters, "inputs": inputs, "chains": chains}


def _invariant(raw: Any, at: str, f: _Fields) -> Invariant:
    inv = f.obj(raw, at)
    for key in ("name", "status", "violations", "allowed"):
        if key not in inv:
            raise f.fail(f"{at}.{key}", "missing")
    status = f.text(inv["status"], f"{at}.status")
    if status not in STATUSES:
        raise f.fail(f"{at}.status", f"{_short(status)} is none of {', '.join(STATUSES)}")
    out: Invariant = {
        "name": f.text(inv["name"], f"{at}.name"), "status": status,
        "violations": f.int(inv["violations"], f"{at}.violations", COUNT),
        "allowed": f.int(inv["allowed"], f"{at}.allowed", COUNT),
        "rules": f.counts(inv.get("rules", {}), f"{at}.rules"),
        "magnitude_by_rule": f.counts(inv.get("magnitude_by_rule", {}), f"{at}.magnitude_by_rule"),
        "examples": _examples(inv, "examples", at, f),
        "allowed_examples": _examples(inv, "allowed_examples", at, f),
    }
    if "pending" in inv:
        out["pending"] = f.int(inv["pending"], f"{at}.pending", COUNT)
    return out


def _examples(inv: dict[str, Any], key: str, at: str, f: _Fields) -> list[Example]:
    return [_example(x, f"{at}.{key}[{i}]", f) for i, x in enumerate(f.items(inv.get(key, []), f"{at}.{key}"))]


def _example(raw: Any, at: str, f: _Fields) -> Example:
    x = f.obj(raw, at)
    if "seq" not in x:
        raise f.fail(f"{at}.seq", "missing")
    ev = x.get("event")
    event: ExampleEvent | None = None
    if ev is not None:
        ev = f.obj(ev, f"{at}.event")
        event = {"event_time_ms": f.opt_int(ev.get("event_time_ms"), f"{at}.event.event_time_ms", TIME_MS),
                 "partition": f.text(ev.get("partition", ""), f"{at}.event.partition"),
                 "change": f.text(ev.get("change", ""), f"{at}.event.change"),
                 "event_id": f.opt_text(ev.get("event_id"), f"{at}.event.event_id")}
    return {"cluster_id": f.opt_text(x.get("cluster_id"), f"{at}.cluster_id"),
            "seq": f.int(x["seq"], f"{at}.seq", SEQ),
            "rule": f.opt_text(x.get("rule"), f"{at}.rule"),
            "expected": f.scalar(x.get("expected"), f"{at}.expected"),
            "actual": f.scalar(x.get("actual"), f"{at}.actual"),
            "magnitude": f.opt_int(x.get("magnitude"), f"{at}.magnitude", COUNT),
            "event": event}


def _chain(raw: Any, at: str, f: _Fields) -> ChainSummary:
    c = f.obj(raw, at)
    cluster_id = f.text(c.get("cluster_id"), f"{at}.cluster_id")
    last_seq = f.int(c.get("last_seq"), f"{at}.last_seq", (-1, SEQ[1]))
    # first_seq and head_hash are what binds the verdict; a report without them is shown as not bound
    binding: tuple[int, str] | None = None
    if "head_hash" in c or "first_seq" in c:
        first_seq = f.int(c.get("first_seq"), f"{at}.first_seq", (0, last_seq))
        head = f.text(c.get("head_hash"), f"{at}.head_hash")
        if not HASH.fullmatch(head):
            raise f.fail(f"{at}.head_hash", f"{_short(head)} is not a sha256 in hex")
        binding = first_seq, head
    gaps = [_gap(g, f"{at}.gaps[{i}]", f) for i, g in enumerate(f.items(c.get("gaps", []), f"{at}.gaps"))]
    if binding is None:
        return {"cluster_id": cluster_id, "last_seq": last_seq, "gaps": gaps}
    return {"cluster_id": cluster_id, "last_seq": last_seq, "first_seq": binding[0], "head_hash": binding[1],
            "gaps": gaps}


def _gap(raw: Any, at: str, f: _Fields) -> ChainGap:
    g = f.obj(raw, at)
    return {"from_seq": f.int(g.get("from_seq"), f"{at}.from_seq", SEQ),
            "to_seq": f.int(g.get("to_seq"), f"{at}.to_seq", SEQ),
            "reason": f.text(g.get("reason", ""), f"{at}.reason")}


# --- binding --------------------------------------------------------------------------------------

def bind(checks: CheckReport, where: str, store: str, cluster: str, window: tuple[int, int],
         hash_at: Callable[[int], str | None], last_seq: int) -> Verdict:
    """Relate a validated check report to the history shown: cluster `cluster` of `store`, window
    seq window[0]..window[1]; `hash_at(seq)` is the store's chain hash at a seq (None: the store does not
    hold it), `last_seq` the store's last seq of the cluster. Refuses (UsageError) a check of another
    cluster or another history."""
    chains = checks["chains"] or []
    named = sorted(set(checks["clusters"]) | {c["cluster_id"] for c in chains})
    if named and cluster not in named:
        of = f" (of {_names(checks['inputs'])})" if checks["inputs"] else ""
        raise UsageError(f"{where} is a check of cluster {_names(named)}{of}, not of cluster {cluster} of "
                         f"{store}: its verdict is not this history's")
    mine = [c for c in chains if c["cluster_id"] == cluster and "head_hash" in c]
    if not mine:
        return Verdict(checks, False, ((UNBOUND, f"{where} does not say which history it judged (a report of an "
                                                 "older ctrlaudit, or made by hand): it may be another history's"),))
    c = mine[0]
    seq, theirs = c["last_seq"], c["head_hash"]
    ours = hash_at(seq) if seq >= 0 else None
    notes: list[tuple[str, str]] = []
    if ours is not None and ours != theirs:
        raise UsageError(f"{where} is a check of another history of cluster {cluster}: at seq {seq} its chain hash "
                         f"is {theirs[:16]}…, {store} has {ours[:16]}… (a fork, or a rewritten history): its verdict "
                         "is not this history's")
    bound = ours is not None
    if not bound:
        held = f"past the end of {store} (seq {last_seq})" if seq > last_seq else f"which {store} does not hold"
        notes.append((UNBOUND, f"{where} judged cluster {cluster} to seq {seq}, {held}: the two histories cannot "
                               "be compared"))
    first, a, b = c["first_seq"], window[0], window[1]
    if first > a or seq < b:
        notes.append((f"the check covers only seq {first}..{seq} of this window's seq {a}..{b}",
                      "its verdict says nothing about the rest of the window"))
    gaps = [f"{g['from_seq']}..{g['to_seq']}" for g in c["gaps"] if g["from_seq"] <= b and g["to_seq"] >= a]
    if gaps:
        notes.append((f"the check had no verified data for seq {_names(gaps)} of this window",
                      "what rests on those stretches it reported as no data, not as holding"))
    others = [x for x in named if x != cluster]
    if others:
        notes.append((f"verdicts over clusters {_names([cluster, *others])} together",
                      f"a verdict may rest on another cluster's events; the violations marked are cluster {cluster}'s"))
    return Verdict(checks, bound, tuple(notes))
