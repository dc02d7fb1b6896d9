"""Live checks (checks.live) agree with the batch report: on the same history, the alerts LiveChecker
raises event by event equal DuckDB's rows — same invariant, seq, rule, status, allowance and related
seq (and magnitude, except election_safety's, which counts the whole epoch) — as multisets, allowed
ones included. Histories: every handmade case, a simulator history with every breach injected, clean
simulator seeds (where allowed unclean elections occur); the real-cluster histories are in
test_real_cluster_checks.py."""
from __future__ import annotations

import functools
import json
import random
from collections import Counter
from pathlib import Path

import pytest

import checks.invariants
from checks.catalog import CATALOG, LIVE_NAMES, NAMES
from checks.duckdb_engine import DuckDBEngine
from checks.inputs import resolve
from checks.invariants._state import HOOKS
from checks.live import JUDGE_ORDER, LIVE_INVARIANTS, MODULES, Alert, LiveChecker, as_row
from schemas.archive.container import iter_records, read_events
from tests.checks.cases import CLEAN, VIOLATING, duckdb_rows

sim = pytest.importorskip("services.simulator")

pytestmark = pytest.mark.xdist_group("handmade-cases")  # with test_duckdb_cases: each case's rows computed once

INJECTED_EVENTS = 60_000
PER_INVARIANT = 2
CLEAN_SEEDS = range(2000, 2005)
CLEAN_EVENTS = 12_000


# --- comparison -----------------------------------------------------------------------------------

def batch_keys(rows) -> Counter:
    """(invariant, cluster, seq, related_seq, rule, status, allowance, magnitude) of DuckDB rows."""
    return Counter((r[0], r[1], r[2], r[3], r[4], r[5], r[6], None if r[0] == "election_safety" else r[9])
                   for r in rows if r[0] in LIVE_NAMES)


def live_keys(alerts: list[Alert]) -> Counter:
    return Counter(a.key() + (None if a.invariant == "election_safety" else a.magnitude,) for a in alerts)


def assert_agree(batch: Counter, live: Counter) -> None:
    missing, extra = batch - live, live - batch
    assert not missing and not extra, {"batch only": sorted(missing)[:10], "live only": sorted(extra)[:10]}


def duck_rows_of_archive(path) -> list[tuple]:
    eng = DuckDBEngine.from_inputs(resolve([path]))
    try:
        return eng.violations(NAMES)
    finally:
        eng.close()


@functools.cache
def live_of_archive(path) -> tuple[Alert, ...]:
    """Observe the archive's events (as ControllerEvents, like the watch agent) file by file, in order. Once
    per archive: the module's tests only read an archive their module-scoped fixture made."""
    checker = LiveChecker()
    alerts: list[Alert] = []
    for f in resolve([path]).archives:
        for e in read_events(f):
            alerts.extend(checker.observe(e))
    return tuple(alerts + checker.finish())  # and what is open at the end: pending, as the batch's rows


# --- catalog ------------------------------------------------------------------------------------

def test_catalog_marks_the_live_invariants():
    assert set(LIVE_NAMES) == set(LIVE_INVARIANTS)
    assert [inv.name for inv in CATALOG if inv.live] == list(LIVE_NAMES)
    assert set(LIVE_NAMES) == set(NAMES)  # every invariant can be judged live with bounded state


def test_every_live_invariant_has_its_predicate_beside_its_sql():
    """checks/invariants/<name>.py exists for exactly the invariants the catalog marks live, beside the
    <name>.sql every invariant has; each module defines hooks the dispatcher knows (a misspelt one would
    never run) and the dispatcher runs them all."""
    folder = Path(checks.invariants.__file__).parent
    assert {p.stem for p in folder.glob("*.sql")} == set(NAMES)
    assert {p.stem for p in folder.glob("*.py") if not p.name.startswith("_")} == set(LIVE_NAMES)
    assert set(LIVE_NAMES) <= set(JUDGE_ORDER) <= set(NAMES) and len(set(JUDGE_ORDER)) == len(JUDGE_ORDER)
    assert set(MODULES) == set(LIVE_NAMES)
    for name, module in MODULES.items():
        assert module.__name__ == f"checks.invariants.{name}"
        defined = {n for n, v in vars(module).items()
                   if callable(v) and getattr(v, "__module__", None) == module.__name__ and not n.startswith("_")}
        assert defined and defined <= set(HOOKS), (name, defined - set(HOOKS))


# --- handmade histories -------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(VIOLATING) + sorted(CLEAN))
def test_live_equals_batch_on_handmade_history(case):
    make = VIOLATING[case][1] if case in VIOLATING else CLEAN[case]
    events = make(case).chained()
    rows = duckdb_rows(case)  # DuckDB's, of the same events
    checker = LiveChecker()
    alerts = checker.observe_all(events) + checker.finish()
    assert_agree(batch_keys(rows), live_keys(alerts))
    if case in VIOLATING:
        name, h = VIOLATING[case][0], make(case)
        assert {(a.invariant, a.rule) for a in alerts if a.status == "violated"} == \
            {(name, rule) for rule, _ in h.bad} | {(inv, rule) for inv, rule, _ in h.bad_other}


# --- simulator histories ------------------------------------------------------------------------

def _inject(out, config, per_invariant):
    rng = random.Random(config.seed)
    names = sim.BREACHES + sim.LIVENESS_BREACHES  # KRaft histories: every breach, the late obligations too
    inject = [(name, rng.randrange(500, INJECTED_EVENTS - 500)) for name in names for _ in range(per_invariant)]
    result = sim.simulate_to_archive(out, config, inject)
    assert not result.not_injected
    return out, result


@pytest.fixture(scope="module")
def injected(tmp_path_factory):
    return _inject(tmp_path_factory.mktemp("live-injected"), sim.SimConfig(seed=77, events=INJECTED_EVENTS),
                   PER_INVARIANT)


@pytest.fixture(scope="module")
def injected_elr(tmp_path_factory):
    """A KIP-966 cluster: the injectors' ELR and committed-data variants take their turns too."""
    config = sim.SimConfig(seed=78, events=INJECTED_EVENTS, elr=True, metadata_version=25)
    return _inject(tmp_path_factory.mktemp("live-injected-elr"), config, 4 * PER_INVARIANT)


@pytest.mark.parametrize("history", ["injected", "injected_elr"])
@pytest.mark.slow
def test_live_equals_batch_with_every_breach_injected(history, request):
    out, result = request.getfixturevalue(history)
    rows = duck_rows_of_archive(out)
    alerts = live_of_archive(out)
    assert_agree(batch_keys(rows), live_keys(alerts))
    # and every injected breach is a live alert at its event, with the ground truth's event id
    by_seq = {(a.invariant, a.seq): a for a in alerts if a.status == "violated"}
    for b in result.breaches:
        a = by_seq.get((b.invariant, b.seq))
        assert a is not None, b
        assert a.event_id == b.event_id
        if b.partition is not None:
            assert (a.topic, a.partition) == (b.topic, b.partition)
    assert {a.invariant for a in alerts if a.status == "violated"} == set(sim.BREACHES) | set(sim.LIVENESS_BREACHES)


@pytest.mark.slow
def test_live_equals_batch_on_clean_seeds(tmp_path):
    for seed in CLEAN_SEEDS:
        sim.simulate_to_archive(tmp_path, sim.SimConfig(seed=seed, events=CLEAN_EVENTS))
    rows = duck_rows_of_archive(tmp_path)
    alerts = live_of_archive(tmp_path)
    assert_agree(batch_keys(rows), live_keys(alerts))
    assert [a for a in alerts if a.status == "violated"] == []
    assert any(a.invariant == "unclean_election_allowed" for a in alerts)  # allowed ones are alerts too


# --- API ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_observe_accepts_events_records_and_rows(injected):
    out, _ = injected
    f = resolve([out]).archives[0]
    events = [e for _, e in zip(range(20_000), read_events(f))]
    records = [r for _, r in zip(range(20_000), iter_records(f))]
    a = LiveChecker().observe_all(events)
    b = LiveChecker().observe_all(records)
    c = LiveChecker().observe_all(as_row(r) for r in records)
    assert a == b == c


@pytest.mark.slow
def test_alert_to_dict_is_json(injected):
    out, result = injected
    alerts = live_of_archive(out)
    d = next(a for a in alerts if a.invariant == "leader_in_isr").to_dict()
    json.dumps(d)
    assert {"invariant", "cluster_id", "seq", "event_id", "topic", "partition", "rule", "status", "allowed",
            "allowance", "expected", "actual", "related_seq", "source_offset"} <= set(d)
    assert d["allowed"] is False and d["status"] == "violated"


def test_subset_of_invariants():
    h = VIOLATING["leader_outside_isr"][1]("leader_outside_isr")
    events = h.chained()
    only = LiveChecker(["leader_in_isr"]).observe_all(events)
    assert only and {a.invariant for a in only} == {"leader_in_isr"}
    with pytest.raises(ValueError):
        LiveChecker(["no_such_invariant"])
