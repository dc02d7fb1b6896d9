"""Who asked, where a person reads it: `explain`, `timeline` and `export --table attributions` over a store loaded
from an archive that keeps requests (the attributions themselves: tests/replay/test_who_asked.py)."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow.parquet as pq

from tests.archive_files import write_archive_file
from tests.ctrlaudit.conftest import run
from tests.replay.test_attribution import T0
from tests.replay.test_who_asked import CLUSTER, history, requests


def store(tmp_path: Path, with_requests: bool = True) -> Path:
    h = history()
    write_archive_file(tmp_path / "a.avro", [*h, *requests(len(h))] if with_requests else h)
    done = run("load", str(tmp_path / "a.avro"), "--store", str(tmp_path / "s.duckdb"))
    assert done.exit_code == 0, done.output
    return tmp_path / "s.duckdb"


def test_explain_and_timeline_name_who_asked(tmp_path: Path) -> None:
    s = store(tmp_path)
    explained = run("explain", "--store", str(s), "--seq", "1")
    assert explained.exit_code == 0, explained.output
    assert "who asked:         requested by User:alice from 10.0.3.7 (client id alice-tool, apache-kafka-java 4.3.1)" \
        in explained.output and "received by node 1: CreateTopics" in explained.output
    shrink = run("explain", "--store", str(s), "--seq", "2")
    assert "who asked:         controller: an ISR/ELR change a partition leader asked for" in shrink.output
    timeline = run("timeline", "--store", str(s), "--topic", "orders", "--partition", "0")
    assert timeline.exit_code == 0, timeline.output
    assert "requested by User:bob (client id bob-tool)" in timeline.output


def test_export_writes_who_changed_what_for_auditors(tmp_path: Path) -> None:
    s = store(tmp_path)
    done = run("export", "--store", str(s), "--table", "attributions", "--format", "csv", "--out",
               str(tmp_path / "who.csv"))
    assert done.exit_code == 0, done.output
    assert f"5 changes and denied attempts of cluster {CLUSTER} (csv)" in done.output
    rows = list(csv.DictReader(io.StringIO((tmp_path / "who.csv").read_text())))
    assert [(r["seq"], r["cause"], r["principal"]) for r in rows] == [
        ("0", "request", "User:alice"), ("1", "request", "User:alice"), ("3", "request", "User:bob"),
        ("9", "denied", "User:mallory"), ("4", "unattributed", "")]
    assert rows[1]["software"] == "apache-kafka-java 4.3.1" and rows[1]["received_by"] == "1"
    parquet = run("export", "--store", str(s), "--table", "attributions", "--out", str(tmp_path / "who.parquet"))
    assert parquet.exit_code == 0, parquet.output
    t = pq.read_table(tmp_path / "who.parquet")
    assert t.column("principal").to_pylist()[:3] == ["User:alice", "User:alice", "User:bob"]
    assert t.schema.field("request_seqs").type.value_type.bit_width == 64


def test_export_of_who_asked_without_kept_requests_is_refused_in_one_line(tmp_path: Path) -> None:
    s = store(tmp_path, with_requests=False)
    refused = run("export", "--store", str(s), "--table", "attributions", "--out", str(tmp_path / "who.csv"))
    assert refused.exit_code == 2 and f"cluster {CLUSTER} keeps no requests" in refused.output
    assert refused.output.strip().count("\n") == 0 and not (tmp_path / "who.csv").exists()
    explained = run("explain", "--store", str(s), "--seq", "1")
    assert "who asked:         not known (the archive keeps no request logs" in explained.output


def test_the_report_says_who_changed_what(tmp_path: Path) -> None:
    import html as html_lib
    import re

    s = store(tmp_path)
    done = run("report", "--store", str(s), "--out", str(tmp_path / "r.html"))
    assert done.exit_code == 0, done.output
    page = (tmp_path / "r.html").read_text()
    table = re.search(r'<table id="who-changed-what">(.*?)</table>', page, re.S)
    assert table is not None
    rows = [[html_lib.unescape(c) for c in re.findall(r"<td>(.*?)</td>", r)] for r in table.group(1).split("<tr>")[2:]]
    assert [(r[0], r[6], r[7]) for r in rows] == [
        ("0", "request", "User:alice"), ("1", "request", "User:alice"), ("3", "request", "User:bob"),
        ("9", "denied", "User:mallory"), ("4", "unattributed", "")]
    assert rows[0][8:11] == ["10.0.3.7", "alice-tool", "apache-kafka-java 4.3.1"]
    later = run("report", "--store", str(s), "--from", str(T0 + 1_500), "--out", str(tmp_path / "later.html"), "--force")
    assert later.exit_code == 0, later.output
    who = (tmp_path / "later.html").read_text().split('id="who"')[1].split("</div>")[0]
    assert "User:alice" not in who and "User:bob" in who and "User:mallory" in who
    (tmp_path / "bare").mkdir()
    bare = store(tmp_path / "bare", with_requests=False)
    done = run("report", "--store", str(bare), "--out", str(tmp_path / "bare.html"))
    assert done.exit_code == 0, done.output
    assert 'id="who-not-kept">Who asked is not known' in (tmp_path / "bare.html").read_text()


def test_lines_not_read_are_a_gap_of_attribution_said_beside_each_unattributed_change(tmp_path: Path) -> None:
    from tests.services.requests.kafka_lines import log4j

    (tmp_path / "archive").mkdir()
    write_archive_file(tmp_path / "archive" / "a.avro", history())
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kafka-request.log").write_text(log4j('Completed request:{"isForwarded":false,"requestHeader":{',
                                                  "kafka.request.logger") + "\n")
    said = run("who", str(tmp_path / "archive"), "--logs", str(logs))
    assert said.exit_code == 0, said.output
    unattributed = [line for line in said.output.splitlines() if "unattributed: " in line]
    assert unattributed and all("; 1 stretch(es) of the logs not read (" in line and "kafka-request.log:1: not read: "
                                in line and line.endswith("): its request may be among them") for line in unattributed)
    assert "not read: " in said.output and "kafka-request.log" in said.output
