"""Detection matrix against the simulator's ground truth: every injected breach is reported by both
engines at the breaking event with its evidence, nothing else is; clean seeds report nothing."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from checks.catalog import NAMES
from checks.duckdb_engine import DuckDBEngine
from checks.inputs import resolve

sim = pytest.importorskip("services.simulator")

pytestmark = pytest.mark.slow
EVENTS = 100_000


def breaches(zookeeper: bool = False) -> tuple[str, ...]:
    """What the simulator injects: every invariant's breach, the bounded-liveness checks' (obligations met late)
    included, but for those ZooKeeper mode cannot show (no fenced state, no metadata log)."""
    return sim.BREACHES + tuple(n for n in sim.LIVENESS_BREACHES if not (zookeeper and n in sim.KRAFT_ONLY))
PER_INVARIANT = 3
CLEAN_SEEDS = range(1000, 1020)
CLEAN_EVENTS = 10_000


@pytest.fixture(scope="module")
def injected(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim-injected")
    rng = random.Random(4242)
    inject = [(name, rng.randrange(500, EVENTS - 500)) for name in breaches() for _ in range(PER_INVARIANT)]
    result = sim.simulate_to_archive(out, sim.SimConfig(seed=4242, events=EVENTS), inject)
    assert not result.not_injected
    return out, result


# A KIP-966 cluster (metadata.version 25, ELR on): the injectors rotate through the ELR and
# committed-data variants too (4 of isr_elr_sanity, 3 of fenced_broker_not_in_isr, 2 of
# high_watermark_monotonic), so 12 of each give every variant at least 3 breaches.
ELR_PER_INVARIANT = 12
ELR_RULES = ("elr_while_isr_at_min_isr", "leader_from_elr_while_isr_not_empty", "new_leader_behind_committed",
             "fenced_while_leader_or_in_isr", "elr_member_behind_hw_at_entry")
# Where no ELR can exist, the injectors take turns through an emptied ISR (isr_elr_sanity's third variant) and,
# in KRaft at metadata.version 21, an election laundered through an ELR that could not exist (unclean's second).
NO_ELR_RULES = {"kraft": ("isr_empty_without_elr", "unclean_election_via_elr_that_could_not_exist"),
                "zookeeper": ("isr_empty_without_elr",)}


def _fired_at_injected(rows, result, rules):
    injected = {b.seq for b in result.breaches}
    for rule in rules:
        assert {r[2] for r in rows if r[4] == rule and r[5] == "violated"} & injected, rule


def elr_config(seed, events):
    return sim.SimConfig(seed=seed, events=events, elr=True, metadata_version=25)


@pytest.fixture(scope="module")
def injected_elr(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim-injected-elr")
    rng = random.Random(4243)
    inject = [(name, rng.randrange(500, EVENTS - 500)) for name in breaches() for _ in range(ELR_PER_INVARIANT)]
    result = sim.simulate_to_archive(out, elr_config(4243, EVENTS), inject)
    assert not result.not_injected
    return out, result


# A ZooKeeper-mode cluster's history (SimConfig.zookeeper): sourced ZOOKEEPER, no metadata.version, brokers
# registered or gone, so every check runs with its ZooKeeper exemptions, which must hide no breach.
@pytest.fixture(scope="module")
def injected_zk(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim-injected-zk")
    rng = random.Random(4244)
    inject = [(name, rng.randrange(500, EVENTS - 500)) for name in breaches(zookeeper=True) for _ in range(PER_INVARIANT)]
    result = sim.simulate_to_archive(out, sim.SimConfig(seed=4244, events=EVENTS, zookeeper=True), inject)
    assert not result.not_injected
    return out, result


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim-clean")
    for seed in CLEAN_SEEDS:
        sim.simulate_to_archive(out, sim.SimConfig(seed=seed, events=CLEAN_EVENTS))
    for seed in CLEAN_SEEDS[:5]:
        sim.simulate_to_archive(out, elr_config(seed + 500, CLEAN_EVENTS))
    for seed in CLEAN_SEEDS[:5]:
        sim.simulate_to_archive(out, sim.SimConfig(seed=seed + 700, events=CLEAN_EVENTS, zookeeper=True))
    return out


def _duck(path):
    eng = DuckDBEngine.from_inputs(resolve([path]))
    return eng


def matrix(rows, truth, evidence):
    """{invariant: (injected, detected with evidence, extra)} and the misses."""
    bad = {(r[0], r[1], r[2]) for r in rows if r[5] == "violated"}
    cluster = truth[0][0] if truth else None
    want = {(b.invariant, cluster, b.seq) for _, b in truth}
    table, misses = {}, []
    for name in NAMES:
        mine = [(c, b) for c, b in truth if b.invariant == name]
        hit = 0
        for c, b in mine:
            e = evidence.get((c, b.seq))
            ok = (name, c, b.seq) in bad and e is not None and e["event_id"] == b.event_id and \
                (b.partition is None or (e["topic"], e["partition"]) == (b.topic, b.partition))
            hit += ok
            if not ok:
                misses.append(b)
        extra = sum(1 for k in bad if k[0] == name and k not in want)
        table[name] = (len(mine), hit, extra)
    return table, misses


def render(title, table):
    lines = [title, f"{'invariant':30} {'injected':>8} {'detected':>8} {'extra':>6}"]
    lines += [f"{n:30} {i:8} {d:8} {x:6}" for n, (i, d, x) in table.items()]
    return "\n".join(lines)


def _check_engine(eng, result, capsys, title):
    rows = eng.violations(NAMES)
    truth = [(result.config.cluster, b) for b in result.breaches]
    evidence = eng.events_at((c, b.seq) for c, b in truth)
    table, misses = matrix(rows, truth, evidence)
    with capsys.disabled():
        print("\n" + render(title, table))
    assert not misses, misses
    injected = breaches(result.config.zookeeper)
    assert all((i >= PER_INVARIANT if n in injected else i == 0) and d == i and x == 0
               for n, (i, d, x) in table.items()), table
    return rows


def _duck_checked(out, result, capsys, title, source_kind=None):
    """_check_engine on DuckDB over the history `out`; `source_kind`: the only source its events may have."""
    eng = _duck(out)
    try:
        if source_kind is not None:
            assert eng.con.execute("SELECT DISTINCT source_kind FROM events").fetchall() == [(source_kind,)]
        return _check_engine(eng, result, capsys, f"DuckDB, {title}{result.events} events, seed {result.config.seed}")
    finally:
        eng.close()


def test_duckdb_detects_every_injected_breach(injected, capsys):
    out, result = injected
    rows = _duck_checked(out, result, capsys, "")
    _fired_at_injected(rows, result, NO_ELR_RULES["kraft"])


def test_duckdb_detects_every_elr_breach(injected_elr, capsys):
    out, result = injected_elr
    rows = _duck_checked(out, result, capsys, "ELR cluster, ")
    # Each KIP-966 / committed-data rule is what fired at >= 3 of the injected events.
    injected = {b.seq for b in result.breaches}
    for rule in ELR_RULES:
        seqs = {r[2] for r in rows if r[4] == rule and r[5] == "violated" and r[2] in injected}
        assert len(seqs) >= 3, (rule, seqs)


def test_duckdb_detects_every_breach_in_a_zookeeper_mode_history(injected_zk, capsys):
    out, result = injected_zk
    rows = _duck_checked(out, result, capsys, "ZooKeeper-mode history, ", source_kind="ZOOKEEPER")
    _fired_at_injected(rows, result, NO_ELR_RULES["zookeeper"])


def test_duckdb_clean_seeds_report_nothing(clean):
    eng = _duck(clean)
    try:
        assert len(eng.clusters()) == len(CLEAN_SEEDS) + 10
        rows = eng.violations(NAMES)
        assert [r for r in rows if r[5] == "violated"] == []
        assert Counter(r[0] for r in rows)  # allowed unclean elections do occur
    finally:
        eng.close()


@pytest.mark.spark
def test_spark_detects_the_same(injected, injected_elr, injected_zk, clean, spark, capsys):
    from checks.spark_engine import SparkEngine

    for out, result in (injected, injected_elr, injected_zk):
        duck = _duck(out)
        try:
            want = duck.violations(NAMES)
        finally:
            duck.close()
        eng = SparkEngine.from_inputs(spark, resolve([out]))
        try:
            rows = _check_engine(eng, result, capsys, f"Spark, {result.events} events, seed {result.config.seed}")
            assert rows == want
        finally:
            eng.close()
    eng = SparkEngine.from_inputs(spark, resolve([clean]))
    try:
        assert [r for r in eng.violations(NAMES) if r[5] == "violated"] == []
    finally:
        eng.close()


def test_the_late_breaches_are_late_by_the_default_deadlines():
    """The simulator cannot read the catalog (services sit below checks): its lateness is held to it here."""
    from checks.catalog import DEFAULT_DEADLINES

    assert set(sim.LATE_MS) == set(sim.LIVENESS_BREACHES) == set(DEFAULT_DEADLINES)
    assert all(sim.LATE_MS[n] > DEFAULT_DEADLINES[n] for n in DEFAULT_DEADLINES)
