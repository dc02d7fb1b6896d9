"""checks.spark_handoff: where the driver hands Spark the verified events, and the Parquet it writes."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checks import spark_handoff
from checks.inputs import BadInput
from checks.spark_handoff import ENV, Handoff, handoff_parent
from schemas.archive import flat


@pytest.mark.parametrize("master, here", [
    ("local", True), ("local[2]", True), ("local[*]", True),
    ("spark://127.0.0.1:7077", True), ("spark://localhost:7077,127.0.0.1:7078", True),
    ("spark://10.0.0.5:7077", False), ("spark://127.0.0.1:7077,10.0.0.5:7077", False),
    ("yarn", False), ("k8s://https://10.0.0.1:6443", False),
])
def test_the_driver_hands_over_only_where_executors_share_its_disk(master, here, monkeypatch, tmp_path):
    monkeypatch.delenv(ENV, raising=False)
    assert (handoff_parent(master) is not None) == here
    monkeypatch.setenv(ENV, str(tmp_path))  # a directory the user says the executors share
    assert handoff_parent(master) == tmp_path


def test_a_handoff_directory_that_does_not_exist_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(tmp_path / "gone"))
    with pytest.raises(BadInput, match=f"{ENV}=.*gone: no such directory"):
        handoff_parent("local[2]")


def _tables(sizes, topic_id=lambda topic: topic.upper()):
    """Tables of events: every seventh a BrokerChange, the others PartitionChanges and OffsetSamples of topics
    t0..t9 (a topic id each), in two clusters."""
    seq = 0
    for n in sizes:
        cols = {}
        for field in flat.ARROW_SCHEMA:
            cols[field.name] = pa.nulls(n, field.type)
        seqs = range(seq, seq + n)
        kinds = ["BrokerChange" if s % 7 == 0 else ("OffsetSample" if s % 3 == 0 else "PartitionChange") for s in seqs]
        topics = [None if k == "BrokerChange" else f"t{s % 10}" for k, s in zip(kinds, seqs)]
        cols["cluster_id"] = pa.array([f"c{s % 2}" for s in seqs], pa.string())
        cols["seq"] = pa.array(seqs, pa.int64())
        cols["kind"] = pa.array(kinds, pa.string())
        cols["topic"] = pa.array(topics, pa.string())
        cols["topic_id"] = pa.array([topic_id(t) if k == "PartitionChange" else None for k, t in zip(kinds, topics)],
                                    pa.string())
        cols["partition"] = pa.array([None if k == "BrokerChange" else s % 4 for k, s in zip(kinds, seqs)], pa.int32())
        cols["a_isr"] = pa.array([[1, 2]] * n, flat.ARROW_SCHEMA.field("a_isr").type)
        seq += n
        yield pa.table(cols).select(flat.COLUMN_NAMES)


def test_every_row_once_sorted_by_bucket_a_row_group_per_bucket(monkeypatch, tmp_path):
    """About FILE_ROWS rows at a time, split over a file per core; in each file the rows sorted by bucket (a
    partition event's by its cluster, topic and partition, any other event's -1), one row group per bucket, whose
    statistics let a reader of some buckets skip the rest."""
    monkeypatch.setattr(spark_handoff, "FILE_ROWS", 100)
    h = Handoff(tmp_path)
    assert h.path.parent == tmp_path and h.path.name.startswith("ctrlaudit-spark-")
    assert h.write(_tables([30, 80, 0, 5, 250, 1]), flat.ARROW_SCHEMA) == 366
    files = h.files()
    assert files == sorted(h.path.glob("*.parquet")) and len(files) >= 3  # 110, 255, 1 rows cut, each over cores
    back = pa.concat_tables(pq.read_table(f) for f in files)
    assert back.schema.equals(flat.ARROW_SCHEMA.append(pa.field(spark_handoff.BUCKET_COLUMN, pa.int32())))
    assert sorted(back.column("seq").to_pylist()) == list(range(366))
    assert back.column("a_isr").to_pylist() == [[1, 2]] * 366
    bucket_of: dict[tuple[str, str, int], int] = {}
    for row in back.select(["cluster_id", "topic", "partition", "kind", spark_handoff.BUCKET_COLUMN]).to_pylist():
        b = row[spark_handoff.BUCKET_COLUMN]
        if row["kind"] == "BrokerChange":
            assert b == -1
        else:
            assert 0 <= b < spark_handoff.BUCKETS
            key = (row["cluster_id"], row["topic"], row["partition"])
            assert bucket_of.setdefault(key, b) == b  # a partition's events in one bucket
    # a topic's partitions in consecutive buckets from one start (modulo BUCKETS): a large topic is spread
    start: dict[tuple[str, str], int] = {}
    for (cluster, topic, partition), b in bucket_of.items():
        first = (b - partition) % spark_handoff.BUCKETS
        assert start.setdefault((cluster, topic), first) == first
    assert len(set(bucket_of.values())) > len(start) > 1  # topics of two partitions or more in several buckets
    for f in files:
        meta = pq.ParquetFile(f).metadata
        col = meta.schema.names.index(spark_handoff.BUCKET_COLUMN)
        stats = [(meta.row_group(i).column(col).statistics.min, meta.row_group(i).column(col).statistics.max)
                 for i in range(meta.num_row_groups)]
        assert all(lo == hi for lo, hi in stats) and [lo for lo, _ in stats] == sorted({lo for lo, _ in stats})
    assert h.unbucketable() is None
    h.remove()
    assert not h.path.exists()


def test_a_topic_id_under_two_names_is_found_as_the_buckets_are_written(tmp_path):
    h = Handoff(tmp_path)
    h.write(_tables([50, 60], topic_id=lambda topic: "SAME" if topic in ("t3", "t5") else topic.upper()),
            flat.ARROW_SCHEMA)
    assert h.unbucketable() == "topic id SAME of cluster c1 comes under more than one topic name"
    h.remove()


def test_an_unwritable_parent_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(BadInput, match="cannot make a directory for Spark's input in"):
        Handoff(blocker)
