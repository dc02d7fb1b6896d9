"""The nodes' log files found and ordered (rotated oldest first, the live one last), their records merged in time
order across nodes; forwarded pairs held to each other to name clocks that disagree."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from services.normalize.imports import BadImport
from services.requests.clocks import disagreements, pairs
from services.requests.files import cluster_of, log_files, read_logs
from services.requests.reader import BadRequestLogs, Reading
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER
from tests.services.requests.kafka_lines import acl_authorizer, completed, log4j

GROW = {"topics": [{"name": "t", "count": 6, "assignments": None}], "timeoutMs": 1, "validateOnly": False}


def at(second: int) -> str:
    return f"2026-11-20 03:10:{second:02d},000"


def grow(second: int, forwarded: bool = False, correlation: int = 41) -> str:
    return log4j(completed(37, "CREATE_PARTITIONS", 3, GROW, {"results": []}, correlation=correlation,
                           forwarded=forwarded), REQUEST_LOGGER, date=at(second))


def test_files_found_per_directory_rotated_oldest_first(tmp_path):
    node = tmp_path / "broker1"
    (node / "logs").mkdir(parents=True)
    for name in ("kafka-request.log", "kafka-request.log.2026-11-20-02", "kafka-request.log.2026-11-20-01.gz",
                 "kafka-authorizer.log", "kafka-authorizer.log.1", "kafka-authorizer.log.2", "server.log"):
        (node / "logs" / name).write_text("")
    logs = log_files([node])
    assert [[f.name for f in log] for log in logs] == [
        ["kafka-authorizer.log.2", "kafka-authorizer.log.1", "kafka-authorizer.log"],
        ["kafka-request.log.2026-11-20-01.gz", "kafka-request.log.2026-11-20-02", "kafka-request.log"]]


@pytest.mark.parametrize("make, says", [
    (lambda p: p / "missing", "no such file or directory"),
    (lambda p: p, "no kafka-authorizer.log or kafka-request.log"),
])
def test_nothing_to_read_is_said_in_one_line(tmp_path, make, says):
    with pytest.raises(BadRequestLogs, match=says):
        log_files([make(tmp_path)])


def test_nodes_merged_in_time_order(tmp_path):
    b1, b2 = tmp_path / "broker1", tmp_path / "broker2"
    b1.mkdir(), b2.mkdir()
    (b1 / "kafka-request.log.2026-11-20-02.gz").write_bytes(gzip.compress((grow(1) + "\n").encode()))
    (b1 / "kafka-request.log").write_text(grow(5) + "\n")
    (b2 / "kafka-request.log").write_text(grow(3) + "\n" + grow(7) + "\n")
    (b2 / "kafka-authorizer.log").write_text(log4j(acl_authorizer("User:alice", True, "Alter", "10.0.0.5",
                                                                  "Topic:LITERAL:t", "CreatePartitions"),
                                                   AUTHORIZER_LOGGER, date=at(4)) + "\n")
    reading = Reading()
    got = list(read_logs([b1, b2], reading))
    assert [(Path(r.file).parent.name, r.time_ms % 60_000 // 1000) for r in got] == [
        ("broker1", 1), ("broker2", 3), ("broker2", 4), ("broker1", 5), ("broker2", 7)]
    assert reading.kept == 5


def _records(tmp_path: Path, broker: list[str], controller: list[str]) -> list:
    b, c = tmp_path / "broker1", tmp_path / "controller9"
    b.mkdir(parents=True), c.mkdir(parents=True)
    (b / "kafka-request.log").write_text("".join(line + "\n" for line in broker))
    (c / "kafka-request.log").write_text("".join(line + "\n" for line in controller))
    return list(read_logs([b, c], Reading()))


def test_clocks_that_agree_say_nothing(tmp_path):
    records = _records(tmp_path, [grow(5)], [grow(4, forwarded=True)])
    assert len(pairs(records)) == 1 and disagreements(records) == []


def test_a_broker_earlier_than_its_controller_names_both_lines(tmp_path):
    records = _records(tmp_path, [grow(2)], [grow(9, forwarded=True)])
    (d,) = disagreements(records)
    assert d.at_least_ms == 7000
    assert str(d) == (f"{tmp_path}/broker1/kafka-request.log:1 and {tmp_path}/controller9/kafka-request.log:1: the "
                      "broker completed the request it forwarded 7000 ms before the controller did: their clocks "
                      "disagree by at least that much")
    assert disagreements(records, tolerance_ms=7000) == []


def test_two_candidates_are_not_chosen_between(tmp_path):
    records = _records(tmp_path, [grow(2), grow(3)], [grow(9, forwarded=True)])
    assert pairs(records) == [] and disagreements(records) == []
    other = _records(tmp_path / "x", [grow(2, correlation=1)], [grow(9, forwarded=True, correlation=2)])
    assert pairs(other) == []


def test_the_cluster_is_the_one_server_log_beside_says_and_two_are_refused(tmp_path):
    b1, b2 = tmp_path / "broker1", tmp_path / "broker2"
    for node, cluster in ((b1, "MkU3OEVBNTcwNTJENDM2Qg"), (b2, "MkU3OEVBNTcwNTJENDM2Qg")):
        node.mkdir()
        (node / "kafka-request.log").write_text(grow(1) + "\n")
        (node / "server.log").write_text(f"[{at(0)}] INFO Cluster ID = {cluster} (kafka.server.KafkaServer)\n")
    assert cluster_of([b1, b2]) == "MkU3OEVBNTcwNTJENDM2Qg"
    (b2 / "server.log").write_text(f"[{at(0)}] INFO Cluster ID = OtherClusterAAAAAAAAAAA (kafka.server.KafkaServer)\n")
    with pytest.raises(BadImport, match="the logs are of more than one cluster"):
        cluster_of([b1, b2])
    (b1 / "server.log").unlink(), (b2 / "server.log").unlink()
    assert cluster_of([b1, b2]) is None
