"""Reading brokers' authorizer and request logs (services/requests) on one core, beside `grep -c` on the same files
(not a test): the target is ≥ 200k lines/s; grep, which only counts, is the floor no reader goes under.

The files are a busy broker's, made here with the line builders of the tests (tests/services/requests/
kafka_lines.py, which follow Kafka's format strings), with the shipped log levels raised to DEBUG as an audit
needs: per 1000 lines, kafka-request.log holds 600 (250 Produce, 250 Fetch of consumers and followers, 60
Metadata, 35 group coordination, 5 admin requests that change controller state: CreateTopics,
IncrementalAlterConfigs, AlterPartitionReassignments, ElectLeaders, CreatePartitions) and
kafka-authorizer.log 400 (395 allowed decisions of Produce, Fetch and Metadata, 5 of the admin requests).
Every line is read and told apart; the 1% kept are read whole (JSON, body, redaction).

    .venv/bin/python bench/request_logs.py --lines 2000000 [--keep /work/bench-data/requests] [--no-append]

Appends its figures, with the date, the commit and the machine, to bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.results import append, machine  # noqa: E402
from services.requests.reader import Reading, read_file  # noqa: E402
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER  # noqa: E402
from tests.services.requests.kafka_lines import (acl_authorizer, completed, log4j,  # noqa: E402
                                                 standard_authorizer)


def _requests(i: int) -> list[str]:
    """One thousand lines' worth of the request log (600), varied by `i`."""
    partitions = [{"partition": p, "currentLeaderEpoch": 5, "fetchOffset": 1_000_000 + i * 7 + p,
                   "lastFetchedEpoch": -1, "logStartOffset": -1, "partitionMaxBytes": 1048576} for p in range(3)]
    fetch = {"replicaId": -1, "maxWaitMs": 500, "minBytes": 1, "maxBytes": 52428800, "isolationLevel": 0,
             "sessionId": 11, "sessionEpoch": i % 1000, "topics": [{"topicId": "q1w2e3r4t5y6u7i8o9p0aa",
                                                                     "partitions": partitions}],
             "forgottenTopicsData": [], "rackId": ""}
    produce = {"transactionalId": None, "acks": -1, "timeoutMs": 30000, "topicData": [{"name": f"orders-{i % 7}",
               "partitionData": [{"index": i % 12, "recordsSizeInBytes": 16384}]}]}
    produce_response = {"responses": [{"name": f"orders-{i % 7}", "partitionResponses": [
        {"index": i % 12, "errorCode": 0, "baseOffset": 123456 + i, "logAppendTimeMs": -1, "logStartOffset": 0,
         "recordErrors": [], "errorMessage": None}]}], "throttleTimeMs": 0}
    metadata = {"topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAA", "name": f"orders-{i % 7}"}],
                "allowAutoTopicCreation": True, "includeTopicAuthorizedOperations": False}
    client = {"connection": f"10.0.0.1:9092-10.0.{i % 250}.5:{40000 + i % 20000}-{i % 300}",
              "principal": f"User:app-{i % 40}", "software": ("apache-kafka-java", "3.7.0")}
    lines = []
    lines += [completed(0, "PRODUCE", 9, produce, produce_response, correlation=i + k, client_id=f"producer-{k}",
                        **client) for k in range(250)]  # type: ignore[arg-type]
    lines += [completed(1, "FETCH", 16, fetch, {"throttleTimeMs": 0, "errorCode": 0, "sessionId": 11,
                                                "responses": []}, correlation=i + k, client_id=f"consumer-{k}",
                        **client) for k in range(250)]  # type: ignore[arg-type]
    lines += [completed(3, "METADATA", 12, metadata, {"brokers": [], "topics": []}, correlation=i + k,
                        **client) for k in range(60)]  # type: ignore[arg-type]
    lines += [completed(12, "HEARTBEAT", 4, {"groupId": "g", "generationId": 3, "memberId": "m",
                                             "groupInstanceId": None}, {"errorCode": 0}, correlation=i + k,
                        **client) for k in range(35)]  # type: ignore[arg-type]
    admin = [
        completed(19, "CREATE_TOPICS", 7, {"topics": [{"name": f"new-{i}", "numPartitions": 6,
                                                       "replicationFactor": 3, "assignments": [],
                                                       "configs": [{"name": "retention.ms", "value": "86400000"}]}],
                                           "timeoutMs": 30000, "validateOnly": False},
                  {"topics": [{"name": f"new-{i}", "errorCode": 0}]}),
        completed(44, "INCREMENTAL_ALTER_CONFIGS", 1, {"resources": [{"resourceType": 2, "resourceName": "orders-1",
                                                                      "configs": [{"name": "min.insync.replicas",
                                                                                   "configOperation": 0,
                                                                                   "value": "2"}]}],
                                                       "validateOnly": False}, {"responses": []}),
        completed(45, "ALTER_PARTITION_REASSIGNMENTS", 0, {"timeoutMs": 60000, "topics": [{"name": "orders-2",
                  "partitions": [{"partitionIndex": 3, "replicas": [4, 5, 6]}]}]}, {"errorCode": 0}),
        completed(43, "ELECT_LEADERS", 2, {"electionType": 0, "topicPartitions": [{"topic": "orders-2",
                                                                                   "partitions": [3]}],
                                           "timeoutMs": 60000}, {"errorCode": 0}),
        completed(37, "CREATE_PARTITIONS", 3, {"topics": [{"name": "orders-3", "count": 24, "assignments": None}],
                                               "timeoutMs": 1, "validateOnly": False}, {"results": []}),
    ]
    return [log4j(m, REQUEST_LOGGER) for m in lines + admin]


def _decisions(i: int) -> list[str]:
    """One thousand lines' worth of the authorizer log (400)."""
    host = f"10.0.{i % 250}.5"
    out = []
    for k in range(395):
        api, op = (("Produce", "WRITE"), ("Fetch", "READ"), ("Metadata", "DESCRIBE"))[k % 3]
        out.append(standard_authorizer(f"User:app-{k % 40}", True, op, host, f"Topic:LITERAL:orders-{k % 7}", api,
                                       "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=orders, "
                                       f"patternType=PREFIXED, principal=User:app-{k % 40}, host=*, operation={op}, "
                                       "permissionType=ALLOW))"))
    for api in ("CreateTopics", "IncrementalAlterConfigs", "AlterPartitionReassignments", "ElectLeaders",
                "CreatePartitions"):
        out.append(acl_authorizer("User:ops", True, "Alter", host, "Cluster:LITERAL:kafka-cluster", api))
    return [log4j(m, AUTHORIZER_LOGGER) for m in out]


def make(where: Path, lines: int) -> list[Path]:
    files = [where / "kafka-request.log", where / "kafka-authorizer.log"]
    if all(f.exists() for f in files):
        return files
    where.mkdir(parents=True, exist_ok=True)
    with files[0].open("w") as req, files[1].open("w") as auth:
        for i in range(max(lines // 1000, 1)):
            req.write("\n".join(_requests(i)) + "\n")
            auth.write("\n".join(_decisions(i)) + "\n")
    return files


def read_all(files: list[Path]) -> tuple[float, Reading]:
    reading = Reading()
    t = time.perf_counter()
    for f in files:
        for _ in read_file(f, reading):
            pass
    return time.perf_counter() - t, reading


def grep_floor(files: list[Path]) -> float:
    """`grep -c` of every line: its count read from a pipe (with its output on /dev/null GNU grep stops at the
    first match, and would measure nothing)."""
    t = time.perf_counter()
    for f in files:
        subprocess.run(["grep", "-c", "", str(f)], check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--keep", type=Path, help="make (or reuse) the files here")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = make(args.keep or Path(tmp), args.lines)
        total = sum(1 for f in files for _ in f.open("rb"))
        size = sum(f.stat().st_size for f in files)
        best, reading = min((read_all(files) for _ in range(args.runs)), key=lambda r: r[0])
        floor = min(grep_floor(files) for _ in range(args.runs))
    rate, floor_rate = total / best, total / floor
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    figures = {"lines": total, "bytes": size, "read_s": round(best, 2), "lines_per_s": round(rate),
               "MB_per_s": round(size / best / 1e6, 1), "kept": reading.kept, "gaps": reading.not_read,
               "grep_c_s": round(floor, 2), "grep_c_lines_per_s": round(floor_rate)}
    for k, v in figures.items():
        print(f"{k}: {v}")
    if not args.no_append:
        now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        append(f"\n### requests — {now}, commit {commit}, {machine()}\n\n"
               f"`.venv/bin/python bench/request_logs.py --lines {args.lines}` (best of {args.runs}; one process, "
               "one core)\n\n" + "".join(f"- {k}: {v}\n" for k, v in figures.items()))


if __name__ == "__main__":
    main()
