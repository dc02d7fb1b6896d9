"""The watch agent's logic (agents.Watch over checks.live.LiveChecker) raises, on a simulator history
with every breach injected, exactly the DuckDB batch report's rows (the comparison of
tests/checks/test_live.py) — with the events going through the events topic's bytes and the watch
topic's codec, and with a worker restart in the middle (state rebuilt from the history below it)."""
from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from checks.catalog import NAMES
from checks.duckdb_engine import DuckDBEngine
from schemas import codec as event_codec
from schemas.archive import flat
from schemas.archive.chain import Chain
from services.capture import agents
from services.capture.serializers import EventRecordCodec
from tests.checks.test_live import assert_agree, batch_keys

sim = pytest.importorskip("services.simulator")

EVENTS = 20_000
SEED = 31


def live_keys(alerts: list[dict]) -> Counter:
    """tests/checks/test_live.live_keys of Alert.to_dict()s (what the agent publishes)."""
    return Counter((a["invariant"], a["cluster_id"], a["seq"], a["related_seq"], a["rule"], a["status"],
                    a["allowance"], None if a["invariant"] == "election_safety" else a["magnitude"]) for a in alerts)


@pytest.fixture(scope="module")
def history():
    rng = random.Random(SEED)
    inject = [(name, rng.randrange(200, EVENTS - 200)) for name in sim.BREACHES]
    run = sim.Simulation(sim.SimConfig(seed=SEED, events=EVENTS), inject=inject)
    chain, events = None, []
    for e in run.events():
        chain = chain or Chain(e.cluster_id)
        events.append(chain.append(e))
    assert not run.not_injected
    values = [event_codec.encode(e) for e in events]  # what the events topic holds
    eng = DuckDBEngine.from_arrow(flat.to_arrow(flat.flatten(event_codec.to_avro(e)) for e in events))
    try:
        # what the agent publishes as the events come: not what is open when the history ends (the bounded-liveness
        # checks' pending obligations, no data), which the batch report says and LiveChecker.finish gives
        rows = [r for r in eng.violations(NAMES) if r[5] not in ("pending", "no data")]
    finally:
        eng.close()
    return values, rows, run.breaches


def _history_reader(values: list[bytes]):
    codec = EventRecordCodec()

    async def read(upto: int, start: int = 0):
        for v in values[start:upto]:
            yield codec.loads(v)
    return read


async def _watch(values: list[bytes], start: int, end: int) -> list[dict]:
    """A worker whose watch consumer resumes at `start` (its state rebuilt from [0, start)) and reads to `end`."""
    w = agents.Watch(history_reader=_history_reader(values))
    codec = EventRecordCodec()  # the watch topic's value serializer
    out: list[dict] = []
    for offset in range(start, end):
        out += await w.observe(offset, codec.loads(values[offset]))
    return out


@pytest.mark.slow
def test_watch_alerts_equal_the_batch_report(history):
    values, rows, breaches = history
    alerts = asyncio.run(_watch(values, 0, len(values)))
    assert_agree(batch_keys(rows), live_keys(alerts))
    assert {a["invariant"] for a in alerts if not a["allowed"]} == set(sim.BREACHES)
    violated = {(a["invariant"], a["seq"]) for a in alerts if not a["allowed"]}
    assert all((b.invariant, b.seq) in violated for b in breaches)


@pytest.mark.slow
def test_watch_restarted_in_the_middle_still_equals_the_batch_report(history):
    values, rows, _ = history
    cut = len(values) // 2
    alerts = asyncio.run(_watch(values, 0, cut)) + asyncio.run(_watch(values, cut, len(values)))
    assert_agree(batch_keys(rows), live_keys(alerts))


async def _watch_offsets(values: list[bytes], offsets: list[int | None]) -> list[dict]:
    """One worker's watch agent handed `offsets` in this order (a rebalance can hand some back again; None: the
    partition revoked there)."""
    w = agents.Watch(history_reader=_history_reader(values))
    codec = EventRecordCodec()
    out: list[dict] = []
    for offset in offsets:
        if offset is None:
            w.forget()
            continue
        out += await w.observe(offset, codec.loads(values[offset]))
    return out


def test_events_handed_back_by_a_rebalance_are_not_observed_twice(history):
    # Faust re-delivers from the last committed offset after a rebalance inside the same worker; observing
    # those events again would raise alerts no history has (e.g. every re-seen event "regressing" the
    # controller epoch after a failover was observed).
    values, rows, _ = history
    n = len(values)
    offsets = list(range(0, n // 2)) + list(range(n // 3, n))
    alerts = asyncio.run(_watch_offsets(values, offsets))
    assert_agree(batch_keys(rows), live_keys(alerts))


def test_a_stretch_checked_by_another_worker_after_a_revocation_rebuilds_the_checker(history):
    # another worker held the partition meanwhile: this checker never saw those events, so it is rebuilt
    # from the events topic below the offset it resumes at (and raises no alert of the skipped events)
    values, rows, _ = history
    n = len(values)
    a, b = n // 3, 2 * n // 3
    seen = asyncio.run(_watch_offsets(values, [*range(0, a), None, *range(b, n)]))
    skipped = asyncio.run(_watch(values, a, b))
    assert_agree(batch_keys(rows), live_keys(seen + skipped))


def test_a_stretch_not_handed_over_is_checked_from_the_topic(history):
    # no revocation: Faust did not hand those events over (see Pipeline), nobody checked them; their alerts are
    # raised from the events topic before the next event's
    values, rows, _ = history
    n = len(values)
    seen = asyncio.run(_watch_offsets(values, [*range(0, n // 3), *range(2 * n // 3, n)]))
    assert_agree(batch_keys(rows), live_keys(seen))
