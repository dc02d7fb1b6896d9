"""The scale-out engine: Spark SQL over the same flat `events` view, running the same SQL; where the events
were handed over as Parquet (checks.spark_handoff), the invariants that judge one partition at a time run as one
Spark task per shard of partitions, each an embedded DuckDB over its shard (checks.spark_shards).

The archive is read with Spark's Avro data source. pyspark 4.3's own spark-sql jar carries
`org.apache.spark.sql.avro.AvroFileFormat` (only the short name "avro" is unregistered), so it is
addressed by class name and nothing is downloaded; older pysparks get
`org.apache.spark:spark-avro_2.13:<version>` through spark.jars.packages (Maven Central).
spark-avro turns the payload union into a struct member0..member9 (union order, see
schemas/avro/controller_event.v2.avsc; v1 files are read as v2); FLAT_SELECT maps it onto schemas.archive.flat's
columns.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from checks.catalog import (BY_NAME, EVIDENCE_COLUMNS, Deadlines, last_readers, shared_for, shared_sql, shared_table,
                            sql_for, wrapped)
from checks import hadoop
from checks.duckdb_engine import FIRST_CHANGES, DuckDBEngine
from checks.findings import Findings
from checks.inputs import BadInput, Inputs, chains_of, refuse_trust_for_store
from checks.spark_handoff import FILE_ROWS, Handoff, handoff_parent
from checks.spark_ctes import materialize_plan, split, view_sql
from checks.spark_shards import check_shards, executors_unready, shard_count
from replay import gaps
from replay.gaps import CaptureStretch
from schemas.gap_reasons import partitions_of
from schemas import loader
from schemas.archive import flat
from schemas.archive.signatures import Trust
from schemas.archive.verified import VerifiedRead, verify
from services.capture.connect import connect_timeout

DIALECT = "spark"
AVRO_CLASS = "org.apache.spark.sql.avro.AvroFileFormat"

# payload union order of the schema (v2: v1's and ClientRequest)
_M = {
    "ControllerChange": "payload.member0", "BrokerChange": "payload.member1", "TopicChange": "payload.member2",
    "PartitionChange": "payload.member3", "ConfigChange": "payload.member4", "FeatureLevelChange": "payload.member5",
    "OffsetSample": "payload.member6", "CaptureGap": "payload.member7", "UnknownRecord": "payload.member8",
    "ClientRequest": "payload.member9",
}
_PC, _BC, _OS = _M["PartitionChange"], _M["BrokerChange"], _M["OffsetSample"]
_STATE_FIELDS = (
    ("replicas", "replicas"), ("isr", "isr"), ("adding", "adding_replicas"), ("removing", "removing_replicas"),
    ("elr", "elr"), ("last_known_elr", "last_known_elr"), ("leader", "leader"), ("leader_epoch", "leader_epoch"),
    ("partition_epoch", "partition_epoch"), ("recovery", "leader_recovery_state"),
)


def _fields(struct: str, **columns: str) -> dict[str, str]:
    """Flat column -> its field of one payload struct."""
    return {column: f"{struct}.{field}" for column, field in columns.items()}


def _flat_select() -> list[str]:
    kind = "CASE " + " ".join(f"WHEN {m} IS NOT NULL THEN '{k}'" for k, m in _M.items()) + " END"
    exprs = {
        "seq": "seq", "event_id": "event_id", "cluster_id": "cluster_id", "kind": kind,
        "source_kind": "source.kind", "source_offset": "source.`offset`", "source_index": "source.`index`",
        "source_node": "source.node_id", "source_file": "source.file", "event_time_ms": "event_time_ms",
        "capture_time_ms": "capture_time_ms", "controller_id": "controller_id",
        "controller_epoch": "controller_epoch", "metadata_version": "metadata_version", "bootstrap": "bootstrap",
        "prev_hash": "prev_hash", "hash": "hash",
        "topic": f"coalesce({_PC}.topic, {_M['TopicChange']}.topic, {_OS}.topic)",
        "topic_id": f"coalesce({_PC}.topic_id, {_M['TopicChange']}.topic_id)",
        "partition": f"coalesce({_PC}.`partition`, {_OS}.`partition`)",
        "topic_change": f"{_M['TopicChange']}.kind",
        "has_before": f"CASE WHEN {_PC} IS NULL THEN NULL ELSE {_PC}.before IS NOT NULL END",
        "has_after": f"CASE WHEN {_PC} IS NULL THEN NULL ELSE {_PC}.after IS NOT NULL END",
        "changes": f"{_PC}.changes", "election": f"{_PC}.election",
        **_fields(_M["ControllerChange"], cc_leader="leader_id", cc_epoch="epoch", cc_prev_leader="previous_leader_id",
                  cc_prev_epoch="previous_epoch", cc_voters="voters"),
        **_fields(_BC, broker_id="broker_id", broker_change="kind", broker_fenced="after.fenced",
                  broker_shutdown="after.in_controlled_shutdown", broker_prev_epoch="before.epoch",
                  broker_prev_fenced="before.fenced"),
        "broker_epoch": f"CASE WHEN {_BC}.after IS NOT NULL THEN {_BC}.after.epoch ELSE {_BC}.before.epoch END",
        "broker_rack": f"CASE WHEN {_BC}.after IS NOT NULL THEN {_BC}.after.rack ELSE {_BC}.before.rack END",
        **_fields(_M["ConfigChange"], config_type="resource_type", config_resource="resource_name", config_name="name",
                  config_value="value", config_prev_value="previous_value"),
        **_fields(_M["FeatureLevelChange"], feature="feature", feature_level="level",
                  feature_prev_level="previous_level"),
        **_fields(_OS, s_leader="leader", s_leader_epoch="leader_epoch", s_hw="high_watermark",
                  s_hw_time_ms="hw_time_ms"),
        "s_replicas": f"transform({_OS}.replicas, r -> r.broker_id)",
        "s_leos": f"transform({_OS}.replicas, r -> r.log_end_offset)",
        **_fields(_M["CaptureGap"], gap_from="from_offset", gap_to="to_offset"),
        **_fields(_M["UnknownRecord"], unknown_api_key="api_key", unknown_version="version"),
        "reason": f"coalesce({_PC}.reason, {_M['CaptureGap']}.reason, {_M['UnknownRecord']}.reason)",
        **_fields(_M["ClientRequest"], rq_principal="principal", rq_api="api", rq_client_id="client_id", rq_host="host",
                  rq_listener="listener", rq_software_name="software_name", rq_software_version="software_version",
                  rq_forwarded="forwarded", rq_outcome="outcome", rq_operation="operation", rq_resources="resources",
                  rq_error_codes="error_codes", rq_body="body", rq_log="log",
                  rq_correlation_id="correlation_id"),
        "rq_line": f"CASE WHEN {_M['ClientRequest']} IS NOT NULL THEN source.line END",
    }
    for short, field in _STATE_FIELDS:
        exprs[f"b_{short}"] = f"{_PC}.before.{field}"
        exprs[f"a_{short}"] = f"{_PC}.after.{field}"
    missing = set(flat.COLUMN_NAMES) ^ set(exprs)
    assert not missing, f"flat mapping out of date: {missing}"
    return [f"CAST({exprs[name]} AS {_spark_type(t)}) AS `{name}`" for name, t, _ in flat.FLAT_COLUMNS]


def _spark_type(t: Any) -> str:
    if pa.types.is_list(t):
        return f"ARRAY<{_spark_type(t.value_type)}>"
    return {pa.int32(): "INT", pa.int64(): "BIGINT", pa.string(): "STRING", pa.bool_(): "BOOLEAN"}[t]


FLAT_SELECT = _flat_select()


@cache
def _bundled_avro() -> bool:
    """Does pyspark's own spark-sql jar contain the Avro file format?"""
    import pyspark  # extra: spark

    # Under spark-submit pyspark is imported from a zip; SPARK_HOME then names the installation.
    homes = [Path(os.environ["SPARK_HOME"])] if os.environ.get("SPARK_HOME") else []
    homes.append(Path(pyspark.__file__).parent)
    for jar in (j for home in homes for j in (home / "jars").glob("spark-sql_*.jar")):
        with zipfile.ZipFile(jar) as zf:
            if AVRO_CLASS.replace(".", "/") + ".class" in zf.namelist():
                return True
    return False


_MASTER = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|spark://[^\s/]+:\d+(,[^\s/]+:\d+)*"
                     r"|yarn|k8s://\S+|mesos://\S+")


def check_master(master: str) -> None:
    """BadInput (one line) for a --master that is no Spark master URL, before a JVM is started."""
    if not _MASTER.fullmatch(master.strip()):
        raise BadInput(f"--master {master!r}: not a Spark master URL (local, local[N], local[*], "
                       "spark://HOST:PORT, yarn, k8s://HOST:PORT)")


def check_master_reachable(master: str, timeout: float | None = None) -> None:
    """For spark://HOST:PORT[,HOST:PORT]: BadInput (one line) when no master accepts a TCP connection
    within `timeout` seconds (CTRLAUDIT_CONNECT_TIMEOUT, default 15). Why: Spark's standalone client
    retries an unreachable master three times 20 s apart, printing a Java stack trace each time, before
    it gives up; a socket answers in milliseconds."""
    if not master.startswith("spark://"):
        return

    timeout = connect_timeout() if timeout is None else timeout
    hosts = [h.rpartition(":") for h in master[len("spark://"):].split(",")]
    deadline, last = time.monotonic() + timeout, ""
    while True:
        for host, _, port in hosts:
            try:
                with socket.create_connection((host, int(port)), timeout=max(0.1, min(2.0, deadline - time.monotonic()))):
                    return
            except OSError as exc:
                last = exc.strerror or str(exc) or type(exc).__name__
        if time.monotonic() >= deadline:
            raise BadInput(f"cannot reach the Spark master at {master[len('spark://'):]} within {timeout:g} s ({last})")
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


_LOOPBACK = re.compile(r"//(127\.0\.0\.1|localhost)[:,]")


# The heap of a local master's one JVM, the driver and its executor threads together, unless the user set
# one (SPARK_DRIVER_MEMORY, PYSPARK_SUBMIT_ARGS, spark-defaults.conf). Spark's default, 1g, holds a cached
# million events only by spilling and collecting: the checks took 1.5x as long as with 6g (bench/RESULTS.md).
LOCAL_DRIVER_MEMORY = "4g"


def _driver_memory_set() -> bool:
    if os.environ.get("SPARK_DRIVER_MEMORY") or "--driver-memory" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return True
    conf = Path(os.environ.get("SPARK_CONF_DIR") or Path(os.environ.get("SPARK_HOME", "/nonexistent")) / "conf")
    defaults = conf / "spark-defaults.conf"
    return defaults.is_file() and "spark.driver.memory" in defaults.read_text(errors="replace")


def build_session(master: str | None = "local[2]", app_name: str = "ctrlaudit-check", shuffle_partitions: int = 8) -> Any:
    """A SparkSession kept on loopback, without UI, with Avro available (BadInput when it cannot start).
    master None: the one spark-submit was given (its JVM already holds it)."""
    if master is not None:
        check_master(master)
        check_master_reachable(master)
    from pyspark.sql import SparkSession  # extra: spark

    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    builder = (
        builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master is not None and (master.startswith("local") or _LOOPBACK.search(master)):
        # a driver of a local or loopback master stays on loopback; on YARN, Kubernetes or a remote
        # standalone master the executors must reach it, so Spark's own choice stands
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # the tasks that check shards import DuckDB (checks.spark_shards): this Python has it
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    if master is not None and master.startswith("local") and not _driver_memory_set():
        # read when pyspark starts the JVM (a session already running keeps its heap)
        builder = builder.config("spark.driver.memory", LOCAL_DRIVER_MEMORY)
    if not _bundled_avro():
        import pyspark  # extra: spark

        builder = builder.config("spark.jars.packages", f"org.apache.spark:spark-avro_2.13:{pyspark.__version__}")
    log = jvm_log_path()
    try:
        with jvm_stderr_to(log if master is not None else None):
            spark = builder.getOrCreate()
    except Exception as exc:  # JVM start, master unreachable: Py4J/PySpark errors of any type
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise BadInput(f"Spark did not start with master {master}: {first} (the JVM's own log: {log})") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def jvm_log_path() -> Path:
    """Where the JVM pyspark starts writes its standard error: CTRLAUDIT_SPARK_LOG, else one file per process
    in the temporary directory."""
    named = os.environ.get("CTRLAUDIT_SPARK_LOG")
    return Path(named) if named else Path(tempfile.gettempdir()) / f"ctrlaudit-spark-{os.getpid()}.log"


@contextmanager
def jvm_stderr_to(log: Path | None) -> Iterator[None]:
    """The JVM pyspark launches inherits this process's standard error, where it prints its start-up lines
    (the JDK's incubator-module warning, log4j's default profile, Hadoop's native-library WARN) and every WARN
    after: a check's output is the check's. While the JVM starts, file descriptor 2 points at `log`, so the
    JVM keeps writing there for its whole life; this process's own standard error is put back at once.
    None: no JVM is started here (spark-submit's own), nothing to route."""
    if log is None:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def avro_format() -> str:
    return AVRO_CLASS if _bundled_avro() else "avro"


def materialized(df: Any) -> Any:
    """`df` computed now and kept on the executors (memory, else disk), as a plan that only reads it back.
    Why not `cache()`: Spark's cache lookup (4.3) misses a cached view read inside a CTE (`WITH t AS
    (SELECT * FROM view)`, which every invariant writes), so each query recomputed the partition timeline,
    two or three times over when its CTE was read twice (high_watermark_monotonic at 1M events: 53.5 s,
    11.5 s read back). Like a cached block, a lost executor's part is lost: the job then fails, it never
    answers from less data."""
    from pyspark import StorageLevel  # extra: spark

    return df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def release(df: Any) -> None:
    """Frees the blocks of a `materialized` DataFrame now (else they wait for the JVM's garbage collector)."""
    try:
        df._jdf.queryExecution().logical().rdd().unpersist(False)
    except Exception:  # noqa: BLE001 - not a checkpointed plan, or a Py4J change: the cleaner frees it later
        pass


_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
_GROUPS = itertools.count()


@contextmanager
def jobs_ended(sc: Any, wait: float = 60.0) -> Iterator[str]:
    """Runs the block's Spark jobs in a job group of their own (the caller's group is restored after); on
    the way out cancels those still running and waits (up to `wait` seconds) until none runs.
    Why: adaptive execution answers a query as soon as it can (a join with one side found empty is
    empty) while stages it no longer needs still run; had the views they read been released first,
    their tasks would fail ("Checkpoint block not found", four attempts each, logged as errors; seen on a
    standalone cluster after controller_epoch_monotonic). The rows are not at stake: a stage the answer
    needs fails its query."""
    group = f"ctrlaudit-{os.getpid()}-{next(_GROUPS)}"
    before = {k: sc.getLocalProperty(k) for k in _GROUP_PROPERTIES}
    sc.setJobGroup(group, "ctrlaudit check", interruptOnCancel=True)
    try:
        yield group
    finally:
        sc.cancelJobGroup(group)
        tracker, deadline = sc.statusTracker(), time.monotonic() + wait
        while time.monotonic() < deadline and any(
                (info := tracker.getJobInfo(j)) is not None and info.status == "RUNNING"
                for j in tracker.getJobIdsForGroup(group)):
            time.sleep(0.05)
        for k, v in before.items():
            sc.setLocalProperty(k, v)


class SparkEngine:
    name = "spark"

    def __init__(self, spark: Any, events_df: Any, view: str = "events") -> None:
        self.spark = spark
        self.df = events_df
        self.timings: dict[str, float] = {}
        self.gaps: list[Any] = []  # as DuckDBEngine: stretches that are not verified data
        self.chains: list[dict[str, Any]] = []
        self.deadlines: Deadlines = ()  # the bounded-liveness deadlines given (checks.deadlines)
        # archives on a Hadoop filesystem (checks.hadoop): are the files Spark read still the files verified?
        self.guard: Callable[[], None] | None = None
        self.handoff: Handoff | None = None  # the Parquet directory the events were handed over in
        self.view = view
        # The sharded invariants (checks.spark_shards): None, by the history's size; 0, all as Spark SQL.
        self.shards: int | None = None
        self.unsharded: str | None = None  # why a history was checked without shards
        self.register_view()

    @classmethod
    def from_archives(cls, spark: Any, archives: Sequence[Path], allow_gaps: bool = False, progress: Any = None,
                      trust: Trust | None = None) -> SparkEngine:
        """The archive, verified first on the driver through schemas.archive.verified (the one read path). Spark
        then gets the verified rows as Parquet written by the driver (checks.spark_handoff) when its
        executors share the driver's disk, else reads only the files that verified, each event once."""
        started = time.perf_counter()
        parent = handoff_parent(spark.sparkContext.master)
        if parent is not None:
            read = VerifiedRead(archives, allow_gaps=allow_gaps, progress=progress, trust=trust)
            engine = cls._handed_over(spark, parent, (t for _, t in read),
                                      f"{', '.join(map(str, archives))}: archive holds no verified events")
        else:
            read = verify(archives, allow_gaps=allow_gaps, progress=progress, trust=trust)
            if not read.accepted:
                raise BadInput(f"{', '.join(map(str, archives))}: archive holds no verified events")
            engine = cls._read_files(spark, read.accepted, dedupe=any(c.duplicates for c in read.chains.values()))
        engine.gaps, engine.chains = chains_of(read)
        engine.timings["load"] = time.perf_counter() - started
        return engine

    @classmethod
    def _handed_over(cls, spark: Any, parent: Path, tables: Iterable[Any], empty: str) -> SparkEngine:
        handoff = Handoff(parent)
        try:
            if handoff.write(tables, flat.ARROW_SCHEMA) == 0:
                raise BadInput(empty)
            engine = cls(spark, handoff.read(spark))
        except BaseException:
            handoff.remove()
            raise
        engine.handoff = handoff
        return engine

    @classmethod
    def _read_files(cls, spark: Any, archives: Sequence[Path | str], dedupe: bool) -> SparkEngine:
        started = time.perf_counter()
        try:
            raw = (
                spark.read.format(avro_format())
                .option("avroSchema", json.dumps(loader.current().json))
                .load([str(p) for p in archives])
            )
        except Exception as exc:  # e.g. AVRO_DATA_SOURCE_NOT_ENABLED: no Avro module on the classpath
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BadInput(f"Spark cannot read the archive: {first[:300]}") from exc
        df = raw.selectExpr(*FLAT_SELECT)
        if dedupe:  # files overlapping in seq (verified equal there): each event once
            df = df.dropDuplicates(["cluster_id", "seq"])
        df = df.cache()
        try:
            n = df.count()
        except Exception as exc:  # Spark wraps decoding errors in Py4J/captured exceptions
            df.unpersist()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BadInput(f"{', '.join(map(str, archives))}: corrupt or unreadable archive ({first[:200]})") from exc
        if n == 0:
            df.unpersist()
            raise BadInput(f"{', '.join(map(str, archives))}: archive holds no events")
        engine = cls(spark, df)
        engine.timings["load"] = time.perf_counter() - started
        return engine

    @classmethod
    def from_arrow(cls, spark: Any, table: Any) -> SparkEngine:
        df = spark.createDataFrame(table).cache()
        df.count()
        return cls(spark, df)

    @classmethod
    def from_duckdb(cls, spark: Any, duck: DuckDBEngine, where: str) -> SparkEngine:
        """The events of a DuckDB engine's `events` (a store's, or a table bench/checks_scale.py made), with its
        chain verdicts: handed to Spark as Parquet (checks.spark_handoff), or else as an Arrow table through the
        driver. The caller closes `duck`."""
        parent = handoff_parent(spark.sparkContext.master)
        if parent is not None:
            batches = duck.con.sql("SELECT * FROM events").to_arrow_reader(FILE_ROWS)
            if batches is None:  # DuckDB's stub: no result set (not after a SELECT)
                raise BadInput(f"{where}: store holds no events")
            engine = cls._handed_over(spark, parent, (pa.Table.from_batches([b]) for b in batches),
                                      f"{where}: store holds no events")
        else:
            engine = cls.from_arrow(spark, duck.con.execute("SELECT * FROM events").to_arrow_table())
        engine.gaps, engine.chains = duck.gaps, duck.chains
        return engine

    @classmethod
    def from_uris(cls, spark: Any, uris: Sequence[str], allow_gaps: bool = False, progress: Any = None,
                  trust: Trust | None = None) -> SparkEngine:
        """The archives on a Hadoop filesystem under `uris` (checks.hadoop): verified on the driver first, then
        read by the executors, file by file, those that verified; `confirm_sources` checks after the job that
        the files read are the files verified."""
        verified = hadoop.verified_uris(spark, uris, allow_gaps=allow_gaps, progress=progress, trust=trust)
        try:
            engine = cls._read_files(spark, verified.accepted,
                                     dedupe=any(c.duplicates for c in verified.read.chains.values()))
        except BadInput:
            verified.confirm_unchanged()  # a file that changed since explains an unreadable one best
            raise
        engine.gaps, engine.chains = chains_of(verified.read)
        # only the files the executors read: a manifest, or a file left out under --allow-gaps, was read by
        # the driver alone, from its verified copy
        engine.guard = verified.confirm_unchanged
        return engine

    @classmethod
    def from_inputs(cls, spark: Any, inputs: Inputs, allow_gaps: bool = False, progress: Any = None,
                    trust: Trust | None = None) -> SparkEngine:
        if inputs.store is not None:
            refuse_trust_for_store(trust, inputs.store)
            # A replay store: DuckDB reads it (and checks its layout)
            duck = DuckDBEngine.from_store(inputs.store)
            try:
                return cls.from_duckdb(spark, duck, str(inputs.store))
            finally:
                duck.close()
        if inputs.uris:
            return cls.from_uris(spark, inputs.uris, allow_gaps=allow_gaps, progress=progress, trust=trust)
        return cls.from_archives(spark, inputs.sources(), allow_gaps=allow_gaps, progress=progress, trust=trust)

    def confirm_sources(self) -> None:
        """After the last query: ArchiveProblem if a file the executors read is no longer the file that
        was verified (archives on a Hadoop filesystem; local archives: nothing to confirm, as before)."""
        if self.guard is not None:
            self.guard()

    def register_view(self) -> None:
        """Makes the view `events` (every query's input) this engine's events, again if another engine of
        the same session took the name since: its events may be gone with it (a removed handoff)."""
        self.df.createOrReplaceTempView(self.view)

    def kind_counts(self) -> dict[str, int]:
        self.register_view()
        return {r[0]: r[1] for r in self.spark.sql("SELECT kind, count(*) FROM events GROUP BY kind").collect()}

    def clusters(self) -> list[str]:
        self.register_view()
        return [r[0] for r in self.spark.sql("SELECT DISTINCT cluster_id FROM events ORDER BY 1").collect()]

    def findings(self, names: Sequence[str]) -> Findings:
        """All named invariants, one query after the other, their rows put into an in-memory DuckDB
        (checks.findings), where the report reads them as DuckDB's: written as Parquet by the executors
        where the events were handed over (`_written_findings`), else streamed a partition at a time."""
        started = time.perf_counter()
        if not names:
            return Findings.of_rows(())
        self.register_view()
        by_shards = self._by_shards(names)
        names = [n for n in names if n not in by_shards]
        shared: dict[str, Any] = {}
        try:
            # a relation several of them read (checks.catalog.shared_for) is computed once, before them
            for s in shared_for(names):
                with self._computed_once(shared_sql(s, DIALECT)) as sql:
                    shared[s] = materialized(self.spark.sql(sql))
                shared[s].createOrReplaceTempView(shared_table(s))
            built = frozenset(shared)
            done = last_readers(names, built)

            def ran(name: str) -> None:  # the relations no later query reads: their blocks freed now
                for s in done[name]:
                    self.spark.catalog.dropTempView(shared_table(s))
                    release(shared.pop(s))

            if self.handoff is not None:
                found = self._written_findings(self.handoff, names, built, ran, by_shards)
            else:
                rows = self._all_rows(names, built, ran)
                try:
                    found = Findings.of_rows(rows)
                finally:
                    rows.close()  # a query that failed half way drops its views now, not at garbage collection
        finally:
            for s, df in shared.items():
                self.spark.catalog.dropTempView(shared_table(s))
                release(df)
        self.timings["all"] = time.perf_counter() - started
        return found

    def _by_shards(self, names: Sequence[str]) -> list[str]:
        """Those of `names` to check by shards (checks.spark_shards): the sharded ones, where the events were
        handed over (the executors read the handoff's files), unless shards are off or the history cannot be
        split (`unsharded` then says why)."""
        handoff = self.handoff
        wanted = [n for n in names if BY_NAME[n].sharded] if self.shards != 0 and handoff is not None else []
        if handoff is not None and wanted:
            self.unsharded = handoff.unbucketable() or executors_unready(self.spark)
        return [] if self.unsharded else wanted

    def _written_findings(self, handoff: Handoff, names: Sequence[str], built: frozenset[str],
                          ran: Callable[[str], None], by_shards: Sequence[str] = ()) -> Findings:
        """Each invariant's rows written as Parquet by the executors beside the handoff directory (the
        driver's, or one the executors share with it; not inside it, which Spark reads as the events), then
        read by DuckDB: the rows do not come through the driver and Python one partition at a time
        (toLocalIterator: 10.8-14.7 s against 8.2-8.5 s written, for unclean_election_allowed's 796k rows at
        10M events, warm; bench/RESULTS.md 2026-11-27 13:20)."""
        where = Handoff(handoff.path.parent, prefix="ctrlaudit-spark-findings-", what="findings")
        found = Findings.of_rows(())
        try:
            if by_shards:
                started, out = time.perf_counter(), where.path / "shards"
                out.mkdir()
                with jobs_ended(self.spark.sparkContext):
                    written = check_shards(self.spark, handoff.files(), by_shards,
                                           self.shards or shard_count(self.spark, handoff.rows), out)
                found.add_parquet(sorted(written))
                shutil.rmtree(out, ignore_errors=True)
                self.timings["shards"] = time.perf_counter() - started
            for name in names:
                out = where.path / name
                with self._computed_once(sql_for(name, DIALECT, built, self.deadlines)) as sql:
                    self.spark.sql(wrapped(name, sql)).write.parquet(out.as_uri())
                found.add_parquet(sorted(str(p) for p in out.glob("*.parquet")))
                shutil.rmtree(out, ignore_errors=True)
                ran(name)
        except BaseException:
            found.close()
            raise
        finally:
            where.remove()
        return found

    def _all_rows(self, names: Sequence[str], built: frozenset[str],
                  ran: Callable[[str], None]) -> Generator[tuple[Any, ...], None, None]:
        for name in names:
            yield from self._rows(name, built)
            ran(name)

    def _rows(self, name: str, built: frozenset[str]) -> Iterator[tuple[Any, ...]]:
        with self._computed_once(sql_for(name, DIALECT, built, self.deadlines)) as sql:
            yield from (tuple(r) for r in self.spark.sql(wrapped(name, sql)).toLocalIterator(prefetchPartitions=True))

    @contextmanager
    def _computed_once(self, sql: str) -> Iterator[str]:
        """`sql` with the CTEs it reads more than once made views computed once (checks.spark_ctes);
        the views are dropped and their blocks released after, once no job of the query runs."""
        query = split(sql)
        reserved = frozenset(t.name.lower() for t in self.spark.catalog.listTables() if t.isTemporary)
        views: dict[str, Any] = {}
        try:
            with jobs_ended(self.spark.sparkContext):
                for cte in materialize_plan(query, reserved):
                    views[cte] = materialized(self.spark.sql(view_sql(query, cte, frozenset(views))))
                    views[cte].createOrReplaceTempView(cte)
                yield query.text(frozenset(views))
        finally:
            for cte, df in views.items():
                self.spark.catalog.dropTempView(cte)
                release(df)

    def violations(self, names: Sequence[str]) -> list[tuple[Any, ...]]:
        """Rows sorted like DuckDB's (for tests and small histories; the report reads `findings`)."""
        found = self.findings(names)
        try:
            return found.rows()
        finally:
            found.close()

    def capture_stretches(self) -> list[tuple[str, CaptureStretch]]:
        """Every cluster's stretches nobody read, as replay.gaps derives them, from the few rows they rest on:
        the CaptureGap events and, per gap, its neighbours read before and after, the last event read before
        its first missing source position and its partition's next change (one pass over the events, the gaps
        broadcast), handed to replay.gaps in a DuckDB table of their own."""
        cols = ", ".join(gaps.STRETCH_COLUMNS)
        found = self.spark.sql(f"SELECT {cols} FROM events WHERE kind = 'CaptureGap' {gaps.STATE_GAP}").collect()
        if not found:
            return []
        held = [(r["cluster_id"], r["seq"], r["gap_from"] if r["gap_from"] is not None else -1, r["source_kind"],
                 *(partitions_of(r["reason"] or "") or ((None, None),))[0]) for r in found]
        self.spark.createDataFrame(held, "cluster_id STRING, seq BIGINT, gap_from BIGINT, source_kind STRING, "
                                         "topic STRING, `partition` INT").createOrReplaceTempView("ctrlaudit_gaps")
        try:
            near = self.spark.sql("""
                SELECT /*+ BROADCAST(g) */ g.cluster_id,
                       max(CASE WHEN e.seq < g.seq THEN e.seq END) AS before_gap,
                       min(CASE WHEN e.seq > g.seq THEN e.seq END) AS after_gap,
                       max(CASE WHEN e.seq < g.seq AND e.source_kind = g.source_kind AND e.source_offset >= 0
                                 AND e.source_offset < g.gap_from THEN e.seq END) AS before_source,
                       min(CASE WHEN e.seq > g.seq AND e.kind = 'PartitionChange' AND e.topic = g.topic
                                 AND e.`partition` = g.`partition` THEN e.seq END) AS next_change
                FROM events e JOIN ctrlaudit_gaps g ON e.cluster_id = g.cluster_id
                WHERE e.kind <> 'CaptureGap' GROUP BY g.cluster_id, g.seq""").collect()
            keys = sorted({(r[0], seq) for r in near for seq in r[1:] if seq is not None})
            rows = [tuple(r) for r in found]
            if keys:
                self.spark.createDataFrame(keys, "k_cluster STRING, k_seq BIGINT").createOrReplaceTempView(
                    "ctrlaudit_near")
                rows += [tuple(r) for r in self.spark.sql(
                    f"SELECT /*+ BROADCAST(k) */ {', '.join('e.' + c for c in gaps.STRETCH_COLUMNS)} FROM events e "
                    "JOIN ctrlaudit_near k ON e.cluster_id = k.k_cluster AND e.seq = k.k_seq").collect()]
                self.spark.catalog.dropTempView("ctrlaudit_near")
        finally:
            self.spark.catalog.dropTempView("ctrlaudit_gaps")
        return gaps.stretches_of_rows(rows)

    def first_changes(self, keys: Iterable[tuple[str, str, int, int]]) -> dict[tuple[str, str, int, int], int]:
        """As DuckDBEngine.first_changes (the same query, the wanted keys broadcast)."""
        keys = sorted(set(keys))
        if not keys:
            return {}
        self.spark.createDataFrame(keys, "k_cluster STRING, k_topic STRING, k_partition INT, k_after BIGINT"
                                   ).createOrReplaceTempView("wanted_changes")
        try:
            rows = self.spark.sql(FIRST_CHANGES.replace("SELECT", "SELECT /*+ BROADCAST(w) */", 1)).collect()
        finally:
            self.spark.catalog.dropTempView("wanted_changes")
        return {(r[0], r[1], r[2], r[3]): r[4] for r in rows}

    def events_at(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, Any]]:
        keys = sorted(set(keys))
        if not keys:
            return {}
        wanted = self.spark.createDataFrame(keys, "k_cluster STRING, k_seq BIGINT")
        cols = [f"e.`{c}`" for c in EVIDENCE_COLUMNS]
        joined = self.df.alias("e").join(
            wanted.alias("w"), (wanted.k_cluster == self.df.cluster_id) & (wanted.k_seq == self.df.seq)
        ).selectExpr(*cols)
        return {(r["cluster_id"], r["seq"]): r.asDict(recursive=True) for r in joined.collect()}

    def close(self) -> None:
        self.df.unpersist()
        self.spark.catalog.dropTempView(self.view)
        if self.handoff is not None:
            self.handoff.remove()
