"""Spark: one session, all handmade histories in one run (one cluster id each); the Spark flat view
equals schemas.archive.flat's table, and Spark reports exactly what DuckDB reports."""
from __future__ import annotations

import pytest

from checks.catalog import NAMES
from checks.duckdb_engine import DuckDBEngine
from checks.inputs import resolve
from ctrlaudit.check_run import run_check
from schemas.archive import flat
from tests.checks.cases import VIOLATING, write_all

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("histories")
    return d, write_all(d)


@pytest.fixture(scope="module")
def spark_engine(spark, archive_dir, tmp_path_factory):
    from checks.spark_engine import SparkEngine
    from checks.spark_handoff import ENV

    # its handoff (and the findings' directories beside it) in a directory of its own, not the system's
    # temporary one, where other Spark runs on the machine make and remove theirs while the tests count these
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, str(tmp_path_factory.mktemp("handoff")))
        eng = SparkEngine.from_archives(spark, resolve([archive_dir[0]]).archives)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def spark_rows(spark_engine):
    return spark_engine.violations(NAMES)


@pytest.fixture(scope="module")
def duck_rows(archive_dir):
    eng = DuckDBEngine.from_archives(resolve([archive_dir[0]]).archives)
    try:
        return eng.violations(NAMES)
    finally:
        eng.close()


@pytest.mark.parametrize("path", ["handoff", "spark-avro"])
def test_spark_flat_view_equals_flat_table(spark, spark_engine, archive_dir, path):
    """Both ways Spark gets the events: the driver's verified rows as Parquet (a local master, the module's
    engine), and the executors reading the archive files with spark-avro (any other master)."""
    from checks.inputs import archives_to_arrow
    from checks.spark_engine import SparkEngine

    archives = resolve([archive_dir[0]]).archives
    want = archives_to_arrow(archives).sort_by([("cluster_id", "ascending"), ("seq", "ascending")])
    if path == "handoff":
        assert spark_engine.handoff is not None
        df = spark_engine.df
    else:
        df = SparkEngine._read_files(spark, archives, dedupe=False).df
    got = df.orderBy("cluster_id", "seq").toArrow()
    assert got.column_names == flat.COLUMN_NAMES
    assert got.num_rows == want.num_rows
    for name in flat.COLUMN_NAMES:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_spark_reports_exactly_the_marked_breaches(spark_rows, archive_dir):
    _, marks = archive_dir
    for case, want in marks.items():
        got = sorted((r[0], r[4], r[2]) for r in spark_rows if r[1] == case and r[5] == "violated")
        assert got == want, case


def test_duckdb_equals_spark(spark_rows, duck_rows):
    assert spark_rows == duck_rows
    assert len(spark_rows) > len(VIOLATING)


def test_duckdb_equals_spark_sql(spark_engine, duck_rows, monkeypatch):
    """Every invariant as Spark SQL (no shards: the engine's way for a history shards cannot split, and the
    Spark dialect of every query) gives DuckDB's rows too."""
    from checks import spark_engine as engine_module

    def no_shards(*args):
        raise AssertionError("shards are off")

    monkeypatch.setattr(spark_engine, "shards", 0)
    monkeypatch.setattr(engine_module, "check_shards", no_shards)
    assert spark_engine.violations(NAMES) == duck_rows


def test_run_check_with_spark_engine(spark, archive_dir, tmp_path):
    d, _ = archive_dir
    some = ["valid_high_watermark", "leader_in_isr"]
    assert run_check([d / "clean_baseline.avro"], engine="spark", spark=spark, invariants=some) == 0
    assert run_check([d / "hw_above_leo.avro"], engine="spark", spark=spark, invariants=some,
                     json_path=tmp_path / "r.json") == 1
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["engine"] == "spark" and report["summary"]["valid_high_watermark"] == "fail"


@pytest.mark.slow
def test_spark_submit_job(archive_dir, tmp_path):
    """The job runs under spark-submit with --master passed through; exit code and JUnit as run_check."""
    import os
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from pathlib import Path

    import pyspark

    d, _ = archive_dir
    submit = Path(sys.executable).parent / "spark-submit"  # the venv's launcher (pyspark/bin lacks +x)
    if not submit.exists():
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    job = Path(__file__).resolve().parents[2] / "ctrlaudit" / "spark_job.py"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    xml = tmp_path / "r.xml"
    proc = subprocess.run(
        [str(submit), "--master", "local[1]", str(job), str(d / "leader_outside_isr.avro"),
         "--invariant", "leader_in_isr", "--invariant", "isr_elr_sanity", "--junit", str(xml),
         "--shuffle-partitions", "1"],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]
    root = ET.parse(xml).getroot()
    assert root.get("failures") == "1"


def test_a_file_uri_goes_through_hadoops_filesystem_and_reports_the_same(spark, archive_dir, tmp_path):
    """file:// is read as any Hadoop URI (checks.hadoop: listed, copied, verified, read by URI), and
    reports what the local path reports."""
    import json

    d, _ = archive_dir
    some = ["leader_in_isr", "valid_high_watermark"]  # the read is under test here, not the catalog
    assert run_check([d.resolve().as_uri()], engine="spark", spark=spark, invariants=some,
                     json_path=tmp_path / "uri.json") == 1
    assert run_check([d], engine="spark", spark=spark, invariants=some, json_path=tmp_path / "path.json") == 1
    uri, path = (json.loads((tmp_path / f).read_text()) for f in ("uri.json", "path.json"))
    assert uri["inputs"] == [d.resolve().as_uri()] and path["inputs"] == [str(d)]
    drop = ("seconds", "inputs")
    assert {k: v for k, v in uri.items() if k not in drop} == {k: v for k, v in path.items() if k not in drop}


def test_a_local_session_gets_a_heap_for_the_cached_events(spark, monkeypatch, tmp_path):
    """Spark's 1g default made the checks 1.5x slower (bench/RESULTS.md): a local master gets
    LOCAL_DRIVER_MEMORY unless the user chose a heap, which then stands."""
    from checks.spark_engine import LOCAL_DRIVER_MEMORY, _driver_memory_set

    chosen_here = _driver_memory_set()  # this machine's own setting, when it has one
    for var in ("SPARK_DRIVER_MEMORY", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(var, raising=False)
    assert not _driver_memory_set()
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 2g pyspark-shell")
    assert _driver_memory_set()
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS")
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.memory 3g\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert _driver_memory_set()
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "5g")
    assert _driver_memory_set()
    # the session the tests share (started by build_session) has that heap, unless the machine chose one
    if not chosen_here:
        heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
        assert spark.conf.get("spark.driver.memory") == LOCAL_DRIVER_MEMORY
        assert heap > 0.8 * int(LOCAL_DRIVER_MEMORY[:-1]) * 2**30


def test_a_shared_relation_is_read_back_inside_a_cte_and_released(spark, spark_engine):
    """Every invariant reads a shared relation through a CTE (`WITH timeline AS (SELECT * FROM view)`),
    often twice. A cached view is missed there by Spark's cache lookup and recomputed at each read (the
    partition timeline's window, 5x slower at 1M events); a materialized one is only read back. Released,
    its blocks are gone."""
    from checks.catalog import shared_sql, shared_table
    from checks.spark_engine import DIALECT, materialized, release

    def blocks() -> int:
        return len(spark.sparkContext._jsc.sc().getRDDStorageInfo())

    before = blocks()
    spark_engine.register_view()
    df = materialized(spark.sql(shared_sql("partition_timeline", DIALECT)))
    view = shared_table("partition_timeline")
    df.createOrReplaceTempView(view)
    try:
        assert blocks() == before + 1
        query = spark.sql(f"WITH t AS (SELECT * FROM {view} v) "
                          "SELECT count(*) FROM t a JOIN t b ON a.cluster_id = b.cluster_id AND a.seq = b.prev_seq")
        plan = query._jdf.queryExecution().optimizedPlan().toString()
        assert "Window" not in plan, plan
        assert query.collect()[0][0] > 0
    finally:
        spark.catalog.dropTempView(view)
        release(df)
    assert blocks() == before


@pytest.mark.parametrize("written", [True, False])
def test_a_shared_relation_goes_once_its_last_reader_has_run(spark, spark_engine, monkeypatch, written):
    """As on DuckDB: the partition timeline's view is dropped and its blocks released before the queries after
    its last reader (high_watermark_monotonic) run, with findings written by the executors or streamed alike."""
    from checks import spark_engine as engine_module
    from checks.catalog import shared_table

    names = ["valid_high_watermark", "high_watermark_monotonic", "unclean_election_allowed", "state_continuity"]
    seen: list[tuple[str, bool]] = []
    made: dict[int, int] = {}  # id of each materialized DataFrame -> queries begun when it was made
    released: dict[int, int] = {}  # ... -> queries begun when it was released
    wrapped, materialized, release = engine_module.wrapped, engine_module.materialized, engine_module.release

    def watched(name, sql):  # called as each query is about to run
        seen.append((name, spark.catalog.tableExists(shared_table("partition_timeline"))))
        return wrapped(name, sql)

    def making(df):
        out = materialized(df)
        made[id(out)] = len(seen)
        return out

    def releasing(df):
        released[id(df)] = len(seen)
        release(df)

    monkeypatch.setattr(engine_module, "wrapped", watched)
    monkeypatch.setattr(engine_module, "materialized", making)
    monkeypatch.setattr(engine_module, "release", releasing)
    monkeypatch.setattr(spark_engine, "shards", 0)  # every invariant as Spark SQL
    if not written:
        monkeypatch.setattr(spark_engine, "handoff", None)
    rows = spark_engine.violations(names)
    assert seen == [(names[0], True), (names[1], True), (names[2], False), (names[3], False)]
    # made before any query (the timeline, and the views of its own query, released at once) ...
    before_all = {df: released[df] for df, at in made.items() if at == 0}
    # ... the timeline released after the second query, before the third began
    assert sorted(before_all.values())[-1] == 2, before_all
    assert set(released) == set(made) and any(r[0] == "high_watermark_monotonic" for r in rows)


def test_ctes_read_twice_are_computed_once_then_dropped(spark, spark_engine):
    """unclean_election_allowed reads its candidate elections four times (three config scopes and the final
    join): on Spark they are a view computed once while the query runs, and gone after, its blocks
    released; config_as_of, read once (by config_resolved's aggregate), stays inline."""
    from checks.catalog import sql_for, wrapped

    def blocks() -> int:
        return len(spark.sparkContext._jsc.sc().getRDDStorageInfo())

    def temp_views() -> set[str]:
        return {t.name for t in spark.catalog.listTables() if t.isTemporary}

    before, views = blocks(), temp_views()
    spark_engine.register_view()
    with spark_engine._computed_once(sql_for("unclean_election_allowed", "spark")) as sql:
        assert temp_views() == views | {"candidates"}
        assert blocks() == before + 1
        assert "config_as_of AS (" in sql
        assert "candidates AS (" not in sql and "FROM candidates" in sql
        rows = sorted((tuple(r) for r in spark.sql(wrapped("unclean_election_allowed", sql)).collect()), key=repr)
    assert temp_views() == views and blocks() == before
    inline = sorted((tuple(r) for r in spark.sql(wrapped("unclean_election_allowed",
                                                         sql_for("unclean_election_allowed", "spark"))).collect()), key=repr)
    assert rows == inline and rows


@pytest.mark.parametrize("name", ["state_continuity", "fenced_broker_not_in_isr"])
def test_joins_with_a_side_few_by_nature_are_broadcast(spark, spark_engine, name):
    """Every join of these two queries has a side few by nature (topics, partition keys, brokers, fences,
    gaps, breaks) and names it in a BROADCAST hint: with Spark's size-based broadcast off, as for inputs it
    cannot size before they run, no join sorts the events by its key (a sort-merge join), and the rows are the
    ones it gives without the hints."""
    import re

    from checks.catalog import sql_for, wrapped

    spark_engine.register_view()
    old = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        with spark_engine._computed_once(sql_for(name, "spark")) as sql:
            query = spark.sql(wrapped(name, sql))
            plan = query._jdf.queryExecution().executedPlan().toString()
            assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan, plan
            rows = sorted((tuple(r) for r in query.collect()), key=repr)
        unhinted = re.sub(r"/\*\+ BROADCAST\([^)]*\) \*/ ", "", sql_for(name, "spark"))
        assert "/*+" not in unhinted
        bare = spark.sql(wrapped(name, unhinted))
        assert "SortMergeJoin" in bare._jdf.queryExecution().executedPlan().toString()
        assert sorted((tuple(r) for r in bare.collect()), key=repr) == rows
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", old)


def test_a_run_failing_half_way_drops_its_views(spark, spark_engine, monkeypatch):
    """A failure while the rows stream (here: after the first row) leaves no view of the run behind, even
    while the failure is still held (a generator left open would keep them until garbage collection)."""
    from checks import spark_engine as engine_module

    def views() -> set[str]:
        return {t.name for t in spark.catalog.listTables() if t.isTemporary}

    def first_row_then_fail(rows):
        next(iter(rows))
        assert "candidates" in views()  # the query is running with its views
        raise RuntimeError("stopped half way")

    before = views()
    monkeypatch.setattr(spark_engine, "shards", 0)  # every invariant as Spark SQL
    monkeypatch.setattr(spark_engine, "handoff", None)  # the rows stream through the driver
    monkeypatch.setattr(engine_module.Findings, "of_rows", staticmethod(first_row_then_fail))
    with pytest.raises(RuntimeError, match="half way") as failure:
        spark_engine.findings(["unclean_election_allowed"])
    assert failure.value is not None and views() == before


def _findings_dirs(engine):
    return sorted(engine.handoff.path.parent.glob("ctrlaudit-spark-findings-*"))


def test_findings_written_by_the_executors_are_the_streamed_ones(spark, spark_engine, duck_rows, monkeypatch):
    """With a handoff directory the executors write each invariant's rows as Parquet beside it and DuckDB
    reads them (no row passes through Python); without one they stream through the driver. Both give
    DuckDB's rows, and the written files are gone after."""
    from checks import spark_engine as engine_module

    streamed = []
    of_rows = engine_module.Findings.of_rows

    def counting(rows):
        rows = list(rows)
        streamed.append(len(rows))
        return of_rows(rows)

    monkeypatch.setattr(engine_module.Findings, "of_rows", staticmethod(counting))
    before = _findings_dirs(spark_engine)
    assert spark_engine.violations(NAMES) == duck_rows
    assert streamed == [0] and _findings_dirs(spark_engine) == before  # an empty table, filled from Parquet
    monkeypatch.setattr(spark_engine, "handoff", None)
    assert spark_engine.violations(NAMES) == duck_rows
    assert streamed[1:] == [len(duck_rows)] and len(duck_rows) > 0


def test_a_written_run_failing_half_way_leaves_no_views_and_no_files(spark, spark_engine, monkeypatch):
    from checks import spark_engine as engine_module

    def views() -> set[str]:
        return {t.name for t in spark.catalog.listTables() if t.isTemporary}

    def fail(self, paths):
        assert paths  # the first invariant's rows were written
        raise RuntimeError("stopped half way")

    before, dirs = views(), _findings_dirs(spark_engine)
    monkeypatch.setattr(spark_engine, "shards", 0)  # every invariant as Spark SQL
    monkeypatch.setattr(engine_module.Findings, "add_parquet", fail)
    with pytest.raises(RuntimeError, match="half way"):
        spark_engine.findings(["unclean_election_allowed", "distinct_replicas"])
    assert views() == before and _findings_dirs(spark_engine) == dirs


def test_jobs_a_query_leaves_running_end_before_its_views_go(spark):
    """Adaptive execution may answer a query while stages it no longer needs still run (a join with one
    side found empty); on a standalone cluster those read the query's views after their release and
    failed four times each. jobs_ended cancels the block's jobs still running and waits for them on the
    way out, and gives the caller back its own job group."""
    import time

    from pyspark import InheritableThread

    from checks.spark_engine import jobs_ended

    sc = spark.sparkContext
    sc.setJobGroup("callers-group", "the caller's")
    started = time.monotonic()
    with jobs_ended(sc) as group:
        # a job of the block's group started by another thread, as adaptive execution starts its stages
        worker = InheritableThread(target=lambda: _count_slowly(sc))
        worker.start()
        deadline = time.monotonic() + 60
        while not sc.statusTracker().getJobIdsForGroup(group) and time.monotonic() < deadline:
            time.sleep(0.05)
        (job,) = sc.statusTracker().getJobIdsForGroup(group)
    assert sc.statusTracker().getJobInfo(job).status == "FAILED"  # cancelled, not left running
    assert time.monotonic() - started < 60  # the job sleeps 120 s a task
    assert sc.getLocalProperty("spark.jobGroup.id") == "callers-group"
    worker.join(60)
    sc.setLocalProperty("spark.jobGroup.id", None)


def _count_slowly(sc) -> None:
    import time

    try:
        sc.parallelize(range(2), 2).map(lambda x: time.sleep(120) or x).count()
    except Exception:  # noqa: BLE001 - cancelled: what the test wants
        pass


def test_a_store_is_handed_over_as_parquet_and_checked_like_its_archive(spark, archive_dir, duck_rows, tmp_path):
    """A replay store's events reach a local Spark as Parquet written by the driver (checks.spark_handoff),
    removed when the engine closes; the findings are the archive's."""
    from checks.spark_engine import SparkEngine
    from replay.store import Store

    path = tmp_path / "s.duckdb"
    with Store(path) as s:
        s.load([archive_dir[0]])
    eng = SparkEngine.from_inputs(spark, resolve([path]))
    handoff = eng.handoff.path
    try:
        assert sorted(handoff.glob("*.parquet"))
        assert eng.violations(NAMES) == duck_rows
    finally:
        eng.close()
    assert not handoff.exists()


def test_an_engines_events_stay_its_own_when_another_engine_comes_and_goes(spark, spark_engine, archive_dir):
    """One session, two engines one after the other: the second takes the view `events` and, closed,
    removes its handoff; the first still checks its own events."""
    from checks.spark_engine import SparkEngine

    d, _ = archive_dir
    other = SparkEngine.from_archives(spark, resolve([d / "clean_baseline.avro"]).archives)
    gone = other.handoff.path
    other.close()
    assert not gone.exists() and spark_engine.handoff.path.exists()
    assert len(spark_engine.clusters()) == len(list(d.glob("*.avro")))


def test_every_payload_kind_reads_alike_through_spark_avro(spark, tmp_path):
    """spark-avro's struct of the payload union, member by member (ClientRequest, v2's, included): every kind's
    columns as the verified read makes them."""
    from checks.inputs import archives_to_arrow
    from checks.spark_engine import SparkEngine
    from schemas.archive.writer import ArchiveWriter
    from tests.schemas.samples import PAYLOADS, sample_event

    events = [sample_event(kind, offset=1000 + i) for i, kind in enumerate(PAYLOADS)]
    with ArchiveWriter(tmp_path, events[0].cluster_id, fsync=False) as writer:
        for e in events:
            writer.append(e)
    archives = resolve([tmp_path]).archives
    want = archives_to_arrow(archives).sort_by([("seq", "ascending")])
    got = SparkEngine._read_files(spark, archives, dedupe=False).df.orderBy("seq").toArrow()
    assert got.column("kind").to_pylist() == list(PAYLOADS)
    for name in flat.COLUMN_NAMES:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name
