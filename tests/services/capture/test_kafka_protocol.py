"""services/capture/kafka_protocol.py: the one module of the product that imports kafka-python, for the two
requests confluent-kafka cannot make (ListOffsets to a chosen broker with replica id -2, DescribeQuorum);
the requests it builds and the answers it reads, without a cluster."""
from __future__ import annotations

import ast
from pathlib import Path

from confluent_kafka.admin import AdminClient
from kafka.errors import UnknownBrokerIdError
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from services.capture.kafka_protocol import DEBUGGING_REPLICA_ID, ProtocolClient
from services.capture.sources import QuorumWatermark

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("schemas", "replay", "services", "checks", "ctrlaudit")


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def test_kafka_python_is_imported_by_the_adapter_alone():
    users = sorted(str(p.relative_to(ROOT)) for pkg in PRODUCT for p in (ROOT / pkg).rglob("*.py")
                   if "kafka" in _imports(p))
    assert users == ["services/capture/kafka_protocol.py"]


def test_confluent_kafka_still_lacks_what_kafka_python_is_kept_for():
    """When a release of confluent-kafka offers these, the adapter's requests can move to it (and this
    test says so)."""
    assert not [name for name in dir(AdminClient) if "quorum" in name.lower()]
    try:  # list_offsets asks the leaders as a consumer: no replica id, no broker to send to
        AdminClient({"bootstrap.servers": "127.0.0.1:1"}).list_offsets({}, replica_id=DEBUGGING_REPLICA_ID)
    except TypeError:
        pass
    else:
        raise AssertionError("confluent-kafka's list_offsets takes a replica id now")


class _Partition:
    def __init__(self, index: int, offset: int, error: int = 0) -> None:
        self.partition_index, self.offset, self.error_code, self.leader_epoch = index, offset, error, 4


class _Topic:
    def __init__(self, name: str, partitions: list[_Partition]) -> None:
        self.name, self.partitions = name, partitions


class _Manager:
    """kafka-python's connection manager: records what is sent where, answers as told."""

    def __init__(self, answer: object) -> None:
        self.answer, self.sent, self.updates = answer, [], 0
        self.cluster = self

    def send(self, req, node_id):
        self.sent.append((req, node_id))

        async def done():
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer
        return done()

    def run(self, fn):
        import asyncio
        return asyncio.run(fn())

    def request_update(self):
        self.updates += 1


class _Admin:
    def __init__(self, manager: _Manager | None = None, quorum: list | None = None) -> None:
        self._manager, self.quorum, self.closed = manager, quorum or [], 0

    def describe_metadata_quorum(self):
        hw = self.quorum.pop(0)
        if isinstance(hw, Exception):
            raise hw
        return {"topics": [{"partitions": [{"high_watermark": hw}]}]}

    def close(self):
        self.closed += 1


def client(admin: _Admin) -> ProtocolClient:
    c = ProtocolClient("k:9092")
    c._admin = admin
    return c


def test_list_offsets_goes_to_the_broker_named_with_the_replica_id_given():
    answer = type("R", (), {"topics": [_Topic("t", [_Partition(0, 17), _Partition(1, 5, error=6)])]})()
    manager = _Manager(answer)
    got = client(_Admin(manager)).latest_offsets(3, [("t", 0), ("t", 1)], DEBUGGING_REPLICA_ID)
    assert {k: v[:2] for k, v in got.items()} == {("t", 0): (17, 4)}  # the partition answered with an error: none
    (req, node), = manager.sent
    assert node == 3 and isinstance(req, ListOffsetsRequest)
    assert req.replica_id == DEBUGGING_REPLICA_ID and req.isolation_level == 0
    assert [(t.name, [(p.partition_index, p.timestamp) for p in t.partitions]) for t in req.topics] == [
        ("t", [(0, -1), (1, -1)])]


def test_a_broker_that_does_not_answer_gives_no_offsets_and_an_unknown_one_a_metadata_update():
    manager = _Manager(UnknownBrokerIdError("fenced"))
    assert client(_Admin(manager)).latest_offsets(2, [("t", 0)], -1) == {}
    assert manager.updates == 1


def test_the_quorum_gate_keeps_its_last_mark_through_a_failure_and_reconnects():
    gate = QuorumWatermark("k:9092")
    admins = [_Admin(quorum=[10, RuntimeError("failover")]), _Admin(quorum=[7, 12])]
    gate.client._admin = admins[0]
    assert gate() == 10
    assert gate() == 10 and admins[0].closed == 1 and gate.client._admin is None
    gate.client._admin = admins[1]
    assert gate() == 10  # never back
    assert gate() == 12
