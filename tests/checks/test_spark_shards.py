"""Spark's sharded invariants (checks.spark_shards): each task reads one shard of the handoff's buckets of
partition events (by cluster, topic and partition) and every other event into an embedded DuckDB and checks it.
The rows equal DuckDB's however many shards there are; a history shards cannot split, or executors
without DuckDB, are checked as Spark SQL; a finding outside its shard stops the job."""
from __future__ import annotations

import pytest

from checks.catalog import BY_NAME, NAMES
from checks.duckdb_engine import DuckDBEngine
from checks.inputs import resolve
from tests.checks.cases import VIOLATING, write_all
from tests.checks.histories import K

pytestmark = pytest.mark.spark

SHARDED = [n for n in NAMES if BY_NAME[n].sharded]


@pytest.fixture(scope="module")
def histories(tmp_path_factory):
    d = tmp_path_factory.mktemp("shards")
    write_all(d)
    return d


@pytest.fixture(scope="module")
def duck_rows(histories):
    eng = DuckDBEngine.from_archives(resolve([histories]).archives)
    try:
        return eng.violations(NAMES)
    finally:
        eng.close()


@pytest.fixture(scope="module")
def engine(spark, histories):
    from checks.spark_engine import SparkEngine

    eng = SparkEngine.from_archives(spark, resolve([histories]).archives)
    yield eng
    eng.close()


@pytest.mark.parametrize("shards", [1, 3, 64])
def test_any_number_of_shards_gives_duckdbs_rows(engine, duck_rows, monkeypatch, shards):
    from checks import spark_engine as engine_module

    calls = []
    check_shards = engine_module.check_shards

    def counted(spark, files, names, n, out):
        calls.append((tuple(names), n))
        written = check_shards(spark, files, names, n, out)
        # one file per task, empty or not, and the merged findings of each invariant with a merged CTE
        assert len(written) == n + sum(1 for name in names if BY_NAME[name].merged)
        return written

    monkeypatch.setattr(engine, "shards", shards)
    monkeypatch.setattr(engine_module, "check_shards", counted)
    assert engine.violations(NAMES) == duck_rows
    assert calls == [(tuple(SHARDED), shards)] and engine.unsharded is None
    assert {r[0] for r in duck_rows} & set(SHARDED)  # the shards had findings to give


def test_a_topic_id_under_two_names_is_checked_as_spark_sql(spark, engine, tmp_path, monkeypatch):
    """A topic id that comes under two names (here v's partition written with t's id) would split the history
    state_continuity keys by topic id over two shards: the engine finds it and runs every invariant as Spark
    SQL, with DuckDB's rows. Split anyway, the rows differ: the guard is what keeps them equal."""
    from checks.spark_engine import SparkEngine

    h = VIOLATING["lost_event"][1]("two-names")
    h.topic_ids["v"] = h.tid("t")
    h.create("v", 0, (1, 2, 4))
    h.change("t", 0, (K.ISR,), isr=(2,))
    path = h.write(tmp_path / "two-names.avro")
    duck = DuckDBEngine.from_archives([path])
    try:
        want = duck.violations(NAMES)
    finally:
        duck.close()
    eng = SparkEngine.from_archives(spark, [path])
    try:
        monkeypatch.setattr(eng, "shards", 64)
        assert eng.violations(NAMES) == want
        assert eng.unsharded and "under more than one topic name" in eng.unsharded
        monkeypatch.setattr(eng.handoff, "unbucketable", lambda: None)
        eng.unsharded = None
        split = eng.violations(NAMES)
        assert split != want and eng.unsharded is None
    finally:
        eng.close()
    assert any(r[0] == "state_continuity" for r in want)


def test_executors_without_duckdb_are_checked_as_spark_sql(engine, duck_rows, monkeypatch):
    from checks import spark_engine as engine_module
    from checks.spark_shards import executors_unready

    assert executors_unready(engine.spark) is None  # this session's workers run the driver's Python
    monkeypatch.setattr(engine_module, "executors_unready", lambda spark: "no duckdb there")
    monkeypatch.setattr(engine, "shards", 3)
    assert engine.violations(NAMES) == duck_rows
    assert engine.unsharded == "no duckdb there"


def test_a_finding_outside_its_shard_stops_the_job(engine, monkeypatch):
    """fenced_broker_not_in_isr counts, at a fence, the partitions of every topic still holding the broker: a
    finding at an event every shard holds, sharded only through its merged CTE. Without it, its shards'
    findings would each count their own topics; the task stops the job instead of giving such a row."""
    import dataclasses

    from checks import catalog

    name = "fenced_broker_not_in_isr"
    monkeypatch.setitem(catalog.BY_NAME, name, dataclasses.replace(catalog.BY_NAME[name], merged=None))
    monkeypatch.setattr(engine, "shards", 3)
    with pytest.raises(Exception, match="not a partition event of this shard"):
        engine.violations([name])


def _fence_across_topics(cluster: str, topics: list[str]):
    """Broker 4 in the ISR of a partition of each topic (and leader of one), one topic deleted, then fenced
    twice (the second a re-registration, allowed at metadata.version 21): each fence's finding counts the
    partitions of every live topic still holding it."""
    from schemas.events import BrokerChangeKind
    from tests.checks.histories import baseline

    h = baseline(cluster)
    for i, t in enumerate(topics):
        h.topic(t)
        h.create(t, 0, (4, 1, 2) if i == 0 else (1, 2, 4))
        h.create(t, 1, (2, 1, 4))
    h.change(topics[1], 1, (K.ISR,), isr=(2, 1))
    h.delete_topic(topics[2])
    h.broker(4, BrokerChangeKind.FENCED, fenced=True)
    h.broker(4, BrokerChangeKind.UNFENCED, fenced=False)
    h.change(topics[3], 0, (K.ISR,), isr=(1, 2))
    h.broker(4, BrokerChangeKind.REGISTERED, fenced=True)
    return h


def test_a_fence_counted_across_shards_is_merged(spark, tmp_path, monkeypatch):
    """A fence's finding counts partitions whose topics lie in different shards: each shard gives its rows of
    the merged CTE, and the driver's merge gives DuckDB's one row per fence (count, first state, first
    partition), not a row per shard."""
    import pyarrow as pa

    from checks.spark_engine import SparkEngine
    from checks.spark_handoff import buckets
    from checks.spark_shards import bucket_ranges

    topics = [f"topic-{i:02d}" for i in range(12)]
    cluster = "fence-across"
    path = _fence_across_topics(cluster, topics).write(tmp_path / "fence.avro")
    n = len(topics)
    spread = buckets(pa.table({"cluster_id": [cluster] * 2 * n, "topic": topics * 2,
                               "partition": pa.array([0] * n + [1] * n, pa.int32()),
                               "kind": ["PartitionChange"] * 2 * n})).to_pylist()
    name = "fenced_broker_not_in_isr"
    duck = DuckDBEngine.from_archives([path])
    try:
        want = duck.violations([name])
    finally:
        duck.close()
    fences = [r for r in want if r[4] == "fenced_while_leader_or_in_isr"]
    assert [r[5] for r in fences] == ["violated", "allowed"] and fences[0][9] >= 20  # most of 24 partitions
    eng = SparkEngine.from_archives(spark, [path])
    try:
        for shards in (1, 3, 64):
            monkeypatch.setattr(eng, "shards", shards)
            shard_of = [next(i for i, (a, b) in enumerate(bucket_ranges(shards)) if a <= k <= b) for k in spread]
            assert len(set(shard_of)) >= min(shards, 3)  # the partitions are in several shards
            assert eng.violations([name]) == want and eng.unsharded is None
    finally:
        eng.close()
