"""The verified events handed to Spark as Parquet written by the driver.

The driver reads every archive file through schemas.archive.verified before Spark may read a byte of it (the one
read path: manifests, chain, duplicates, gaps). That read already yields the flat events table, file by
file. When the executors can read the driver's disk (a local master, or a standalone cluster on this host)
those tables are written as Parquet into a directory of the driver's, and Spark reads them: the rows
Spark checks are then exactly the rows the driver verified (each event once, as DuckDB gets them), and
the executors do not decode the Avro a second time. Why: spark-avro decoded the archive's union payloads
at 66k events/s on two cores (151 s for 10M events); the Parquet is written at about 1M rows/s and read
column by column (bench/RESULTS.md, "Spark: the verified events handed over as Parquet").

Elsewhere (YARN, Kubernetes, a remote standalone master, archives on a Hadoop filesystem) the executors
read the verified archive files with spark-avro, as before, unless CTRLAUDIT_SPARK_HANDOFF names a
directory on a filesystem the executors share with the driver.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checks.inputs import BadInput

ENV = "CTRLAUDIT_SPARK_HANDOFF"
# rows per Parquet file and per row group: enough for Spark's vectorized reader to stream, small enough
# that a 1M-event history still gives each core a file of its own
FILE_ROWS = 1 << 19
# Each partition event (PartitionChange, OffsetSample) is in one of BUCKETS buckets by its (cluster id, topic,
# partition), every other event in bucket -1; a file's rows are sorted by bucket, a row group per bucket, so that
# a reader of some buckets (a Spark task checking a shard: checks.spark_shards) skips the others' row groups.
# A topic's partitions go to consecutive buckets from its topic's hash: a topic of many partitions (most of a
# cluster's events, often) is spread over every shard, not held by one task. A power of two (a bit mask).
BUCKETS = 64
# zstd: half the bytes of uncompressed (121 against 237 bytes per event at 10M), for about 1 s more per 1M events
# written and 0.1 s more per 1M read (bench/RESULTS.md, 2026-11-28)
COMPRESSION = "zstd"
BUCKET_COLUMN = "shard_bucket"
SHARD_KINDS = ("PartitionChange", "OffsetSample")


def handoff_parent(master: str) -> Path | None:
    """Where the handoff directory goes: CTRLAUDIT_SPARK_HANDOFF if set, else the system's temporary
    directory for a master whose executors run on this host; None: the executors read the archive."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen:
        parent = Path(chosen)
        if not parent.is_dir():
            raise BadInput(f"{ENV}={chosen}: no such directory")
        return parent
    if master.startswith("local") or _on_this_host(master):
        return Path(tempfile.gettempdir())
    return None


def _on_this_host(master: str) -> bool:
    """spark://HOST:PORT[,HOST:PORT]: every master on loopback (so are its workers, started with it)."""
    if not master.startswith("spark://"):
        return False
    return all(h.rpartition(":")[0] in ("127.0.0.1", "localhost") for h in master[len("spark://"):].split(","))


class Handoff:
    """A directory of Parquet files, the driver's: written once, read by Spark, removed at `remove`."""

    def __init__(self, parent: Path, prefix: str = "ctrlaudit-spark-", what: str = "input") -> None:
        """A new directory in `parent`; `prefix` and `what` name another use of one (Spark's findings)."""
        try:
            self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        except OSError as exc:
            raise BadInput(f"cannot make a directory for Spark's {what} in {parent}: {exc.strerror or exc}") from None
        self.rows = 0
        self._files = 0
        self._workers = max(1, os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None  # while `write` runs
        self._topic_names: dict[tuple[str, str], set[str | None]] = {}  # (cluster, topic id) -> its PartitionChanges' topics

    def write(self, tables: Iterable[pa.Table], schema: pa.Schema) -> int:
        """Every table's rows as Parquet files, about FILE_ROWS rows at a time split over one file per core,
        each file's rows sorted by bucket (BUCKET_COLUMN); the row count."""
        pending: list[pa.Table] = []
        held = 0
        try:
            with ThreadPoolExecutor(self._workers, thread_name_prefix="ctrlaudit-handoff") as self._pool:
                for table in tables:
                    pending.append(table)
                    held += table.num_rows
                    if held >= FILE_ROWS:
                        self._flush(pa.concat_tables(pending), schema)
                        pending, held = [], 0
                if held:
                    self._flush(pa.concat_tables(pending), schema)
        except OSError as exc:  # a full disk: the check cannot run, nothing else is at stake
            raise BadInput(f"cannot write Spark's input to {self.path}: {exc.strerror or exc}") from None
        return self.rows

    def _flush(self, table: pa.Table, schema: pa.Schema) -> None:
        table = table.cast(schema).combine_chunks()
        # the four columns first: filtering every column cost 0.75 s per 512k rows, 7 s at 10M events
        keys = table.select(["kind", "cluster_id", "topic_id", "topic"])
        changes = keys.filter(pc.and_(pc.equal(keys["kind"], "PartitionChange"), pc.is_valid(keys["topic_id"])))
        for r in changes.group_by(["cluster_id", "topic_id", "topic"]).aggregate([]).to_pylist():
            self._topic_names.setdefault((r["cluster_id"], r["topic_id"]), set()).add(r["topic"])
        bucket = buckets(table)
        order = pc.sort_indices(bucket)
        columns = [*table.columns, bucket]
        # sorted by bucket column by column on every core (pyarrow's take releases the GIL; one take of the
        # whole table took 1.3 s per file on one core)
        assert self._pool is not None
        table = pa.Table.from_arrays(list(self._pool.map(lambda c: c.take(order), columns)),
                                     schema=schema.append(pa.field(BUCKET_COLUMN, pa.int32())))
        counts = pc.value_counts(table[BUCKET_COLUMN]).field("counts").to_pylist()  # sorted: in bucket order
        # the buckets as runs of about equal rows, a file each, written side by side
        runs: list[tuple[int, list[int]]] = []
        start, share = 0, -(-table.num_rows // self._workers)
        for n in counts:
            if not runs or sum(runs[-1][1]) >= share:
                runs.append((start, []))
            runs[-1][1].append(n)
            start += n
        names = [self.path / f"part-{self._files + i:05d}.parquet" for i in range(len(runs))]
        list(self._pool.map(lambda job: _write_buckets(table, *job), zip(names, runs)))
        self._files += len(runs)
        self.rows += table.num_rows

    def unbucketable(self) -> str | None:
        """Why the buckets do not hold whole partition histories (None: they do): a topic id under two topic
        names, or with and without one, puts the history state_continuity and reassignment_legal key by topic
        id in two buckets."""
        for (cluster, topic_id), names in sorted(self._topic_names.items()):
            if len(names) > 1:
                return f"topic id {topic_id} of cluster {cluster} comes under more than one topic name"
        return None

    def files(self) -> list[Path]:
        return sorted(self.path.glob("part-*.parquet"))

    def read(self, spark: Any) -> Any:
        """The events as a Spark DataFrame (every query reads the columns it needs from the files)."""
        return spark.read.parquet(self.path.as_uri()).drop(BUCKET_COLUMN)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def buckets(table: pa.Table) -> pa.Array:
    """Each event's bucket (int32): for a partition event its topic's hash (CRC-32 of the cluster id and topic,
    the same in every process) plus its partition, modulo BUCKETS; for any other event -1."""
    key = pc.binary_join_element_wise(table["cluster_id"].combine_chunks(),
                                      pc.fill_null(table["topic"].combine_chunks(), "\x01"), "\x00")
    codes = pc.dictionary_encode(key)
    per_key = pa.array([zlib.crc32(k.encode()) % BUCKETS for k in codes.dictionary.to_pylist()], pa.int32())
    topic = pc.fill_null(pc.take(per_key, codes.indices), 0)  # a null cluster id: bucket 0, still one bucket
    partition = pc.fill_null(table["partition"].combine_chunks().cast(pa.int32()), 0)
    bucket = pc.bit_wise_and(pc.add_checked(topic, pc.bit_wise_and(partition, BUCKETS - 1)), BUCKETS - 1)
    return pc.if_else(pc.is_in(table["kind"].combine_chunks(), pa.array(SHARD_KINDS)), bucket, pa.scalar(-1, pa.int32()))


def _write_buckets(table: pa.Table, path: Path, run: tuple[int, list[int]]) -> None:
    """The rows of consecutive buckets (`run`: the first row, each bucket's row count) as one file, a row group
    per bucket."""
    start, counts = run
    with pq.ParquetWriter(path, table.schema, compression=COMPRESSION) as out:
        for n in counts:
            out.write_table(table.slice(start, n), row_group_size=n)
            start += n
