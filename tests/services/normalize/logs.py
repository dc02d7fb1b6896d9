"""Synthetic metadata logs, written in Kafka's byte format, one record per batch (fixed ids)."""
from __future__ import annotations

from pathlib import Path

from services.kraft.batch import build_batch
from tests.services.kraft.helpers import control_key, control_value, metadata_value

T1 = "AAAAAAAAAAAAAAAAAAAAAQ"  # topic ids (Kafka base64 Uuid strings)
T2 = "AAAAAAAAAAAAAAAAAAAAAg"
INC = "AAAAAAAAAAAAAAAAAAAAAw"


class LogBuilder:
    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.offset = 0
        self.time = 1_700_000_000_000

    def record(self, record_name: str, version: int, epoch: int = 1, **data) -> int:
        value = metadata_value(record_name, version, data)
        self.batches.append(build_batch([(None, value)], base_offset=self.offset, leader_epoch=epoch,
                                        timestamp=self.time))
        self.offset += 1
        self.time += 10
        return self.offset - 1

    def leader_change(self, leader: int, epoch: int, voters=(1, 2, 3)) -> int:
        value = control_value("LeaderChangeMessage", {
            "version": 0, "leaderId": leader, "voters": [{"voterId": v} for v in voters],
            "grantingVoters": [{"voterId": v} for v in voters[:2]]})
        self.batches.append(build_batch([(control_key(2), value)], base_offset=self.offset, leader_epoch=epoch,
                                        timestamp=self.time, control=True))
        self.offset += 1
        return self.offset - 1

    def write(self, path: Path) -> Path:
        path.write_bytes(b"".join(self.batches))
        return path


def broker(b: LogBuilder, bid: int, epoch_offset: int | None = None) -> int:
    return b.record("RegisterBrokerRecord", 3, brokerId=bid, incarnationId=INC, brokerEpoch=b.offset,
                    endPoints=[{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9000 + bid,
                                "securityProtocol": 0}], features=[], rack=f"r{bid % 2}", fenced=True,
                    inControlledShutdown=False)


def partition(b: LogBuilder, tid: str, pid: int, replicas, isr, leader, epoch=0, pepoch=0) -> int:
    return b.record("PartitionRecord", 1, partitionId=pid, topicId=tid, replicas=list(replicas), isr=list(isr),
                    removingReplicas=[], addingReplicas=[], leader=leader, leaderEpoch=epoch,
                    partitionEpoch=pepoch, directories=["AAAAAAAAAAAAAAAAAAAAAA"] * len(replicas))


def change(b: LogBuilder, tid: str, pid: int, epoch: int = 1, **fields) -> int:
    return b.record("PartitionChangeRecord", 0, partitionId=pid, topicId=tid, epoch=epoch, **fields)


def orders_cluster(b: LogBuilder, partitions: int = 1) -> None:
    """Controller 1 in epoch 1, brokers 1 to 3, and topic orders (T1): partition p on the three brokers from
    broker p + 1 on, all in sync, led by the first of them."""
    b.leader_change(leader=1, epoch=1)
    for bid in (1, 2, 3):
        broker(b, bid)
    b.record("TopicRecord", 0, name="orders", topicId=T1)
    for p in range(partitions):
        replicas = [1, 2, 3][p:] + [1, 2, 3][:p]
        partition(b, T1, p, replicas, replicas, leader=replicas[0])
