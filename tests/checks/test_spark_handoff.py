"""checks.spark_handoff: where the driver hands Spark the verified events, and the Parquet it writes."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checks import spark_handoff
from checks.inputs import BadInput
from checks.spark_handoff import ENV, Handoff, handoff_parent
from schemas import flat


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


def _tables(sizes):
    seq = 0
    for n in sizes:
        cols = {}
        for field in flat.ARROW_SCHEMA:
            cols[field.name] = pa.nulls(n, field.type)
        cols["cluster_id"] = pa.array(["c"] * n, pa.string())
        cols["seq"] = pa.array(range(seq, seq + n), pa.int64())
        cols["a_isr"] = pa.array([[1, 2]] * n, flat.ARROW_SCHEMA.field("a_isr").type)
        seq += n
        yield pa.table(cols).select(flat.COLUMN_NAMES)


def test_every_row_once_in_order_in_files_of_about_file_rows(monkeypatch, tmp_path):
    monkeypatch.setattr(spark_handoff, "FILE_ROWS", 100)
    h = Handoff(tmp_path)
    assert h.path.parent == tmp_path and h.path.name.startswith("ctrlaudit-spark-")
    assert h.write(_tables([30, 80, 0, 5, 250, 1]), flat.ARROW_SCHEMA) == 366
    files = sorted(h.path.glob("*.parquet"))
    assert len(files) == 3  # 110, 255, 1 rows: a file is cut once it holds FILE_ROWS
    back = pa.concat_tables(pq.read_table(f) for f in files)
    assert back.schema.equals(flat.ARROW_SCHEMA)
    assert back.column("seq").to_pylist() == list(range(366))
    assert back.column("a_isr").to_pylist() == [[1, 2]] * 366
    h.remove()
    assert not h.path.exists()


def test_an_unwritable_parent_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(BadInput, match="cannot make a directory for Spark's input in"):
        Handoff(blocker)
