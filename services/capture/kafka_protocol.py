"""The two Kafka requests the capture needs that confluent-kafka cannot make, through kafka-python's protocol
layer. This is the one module of the product that imports kafka-python.

Why a second Kafka client at all: confluent-kafka 2.16 (librdkafka 2.16) offers

* no ListOffsets to a chosen broker with a replica id: `AdminClient.list_offsets` asks each partition's
  leader as a consumer (replica id -1) and takes an OffsetSpec and an isolation level, nothing else. The
  offset sampler needs replica id -2 (DEBUGGING_REPLICA_ID) sent to every broker holding a replica: a
  broker then answers from its local replica even as a follower, with its log end offset
  (services/capture/sampler.py says why that and not DescribeLogDirs);
* no DescribeQuorum: librdkafka names the request but has no call that sends it, and the KRaft source's
  commit gate needs the metadata quorum's high watermark (services/capture/sources.py).

Everything else the capture says to Kafka goes through confluent-kafka (services/capture/connect.py) or,
inside the Faust worker, through aiokafka, Faust's own client. All three take their security from one
ClientSecurity (services/capture/security.py), each through its own small renderer.
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Protocol

from services.capture.security import ClientSecurity, kafka_python_kwargs

log = logging.getLogger(__name__)

DEBUGGING_REPLICA_ID = -2  # ListOffsetsRequest.DEBUGGING_REPLICA_ID: answered from a follower's replica too
CONSUMER_REPLICA_ID = -1
LATEST = -1  # ListOffsets' timestamp for the latest offset
REQUEST_TIMEOUT_MS = 5000
UNKNOWN_TOPIC_OR_PARTITION = 3  # Kafka's error code

# (topic, partition) -> (offset, leader epoch or None, when it was read, ms)
Offsets = dict[tuple[str, int], tuple[int, int | None, int]]


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class _Admin(Protocol):
    """kafka-python's KafkaAdminClient (untyped), the calls made here."""

    _manager: Any  # its connection manager: sends a request built here to one broker

    def describe_topics(self, topics: list[str] | None) -> list[dict[str, Any]]: ...
    def describe_metadata_quorum(self) -> dict[str, Any]: ...  # DescribeQuorum's answer, as JSON
    def close(self) -> None: ...


def _now_ms() -> int:
    return int(time.time() * 1000)


class ProtocolClient:
    """A kafka-python admin client of `bootstrap_servers`, opened on first use and closed by `close`."""

    def __init__(self, bootstrap_servers: str, security: ClientSecurity | None = None,
                 client_id: str = "ctrlaudit", metadata_max_age_ms: int | None = None) -> None:
        self.bootstrap = bootstrap_servers
        self.security = security or ClientSecurity()  # PLAINTEXT
        self.client_id = client_id
        self.metadata_max_age_ms = metadata_max_age_ms
        self._admin: _Admin | None = None

    @property
    def admin(self) -> _Admin:
        if self._admin is None:
            from kafka.admin import KafkaAdminClient  # extra: capture

            extra = {} if self.metadata_max_age_ms is None else {"metadata_max_age_ms": self.metadata_max_age_ms}
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS,
                                           client_id=self.client_id, **extra, **kafka_python_kwargs(self.security))
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            admin.close()

    def partitions(self, topics: list[str] | None = None) -> list[PartitionInfo]:
        """Every partition of `topics` (None: all), internal topics left out."""
        out = []
        for t in self.admin.describe_topics(topics):
            if t.get("is_internal") or t["name"].startswith("__") or t.get("error_code"):
                continue
            for p in t["partitions"]:
                out.append(PartitionInfo(t["name"], p["partition_index"], p["leader_id"], tuple(p["replica_nodes"]),
                                         tuple(p["isr_nodes"])))
        return out

    def latest_offsets(self, node: int, tps: list[tuple[str, int]], replica_id: int) -> Offsets:
        """ListOffsets LATEST, READ_UNCOMMITTED, sent to broker `node` as `replica_id`: the offsets of the
        partitions it answered for (none when it does not answer)."""
        from kafka.errors import UnknownBrokerIdError  # extra: capture
        from kafka.protocol.consumer.offsets import ListOffsetsRequest  # extra: capture

        T = ListOffsetsRequest.ListOffsetsTopic
        P = T.ListOffsetsPartition
        by_topic: defaultdict[str, list[Any]] = defaultdict(list)  # kafka-python's requests: untyped
        for t, p in tps:
            by_topic[t].append(P(partition_index=p, timestamp=LATEST))
        req = ListOffsetsRequest(replica_id=replica_id, isolation_level=0,
                                 topics=[T(name=t, partitions=ps) for t, ps in by_topic.items()])
        manager = self.admin._manager

        async def send() -> Any:  # kafka-python's ListOffsetsResponse (untyped)
            return await manager.send(req, node_id=node)
        out: Offsets = {}
        try:
            resp = manager.run(send)
        except Exception as exc:
            log.debug("ListOffsets to %d failed: %s", node, exc)
            if isinstance(exc, UnknownBrokerIdError):  # back from being fenced: learn it for the next round
                manager.cluster.request_update()
            return out
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == 0:
                    out[(t.name, p.partition_index)] = (p.offset, getattr(p, "leader_epoch", -1), _now_ms())
        return out

    def log_ends(self, topic: str, partition: int = 0) -> tuple[int, int] | None:
        """(high watermark, log end offset) of `topic`'s `partition` on its leader; (0, 0) when the topic does not
        exist; None when it cannot be told now (no leader, a broker not answering: asked again later)."""
        try:
            return self._log_ends(topic, partition)
        except Exception as exc:  # a broker down or paused, a leader moving
            log.debug("log ends of %s-%d not read: %s", topic, partition, exc)
            self.close()  # a new connection at the next call
            return None

    def _log_ends(self, topic: str, partition: int) -> tuple[int, int] | None:
        (t,) = self.admin.describe_topics([topic])
        if t.get("error_code") == UNKNOWN_TOPIC_OR_PARTITION:
            return 0, 0
        leaders = [p["leader_id"] for p in t.get("partitions") or () if p["partition_index"] == partition]
        if t.get("error_code") or not leaders or leaders[0] < 0:  # metadata not there yet, a leader moving
            return None
        leader = leaders[0]
        tp = (topic, partition)
        hw = self.latest_offsets(leader, [tp], CONSUMER_REPLICA_ID).get(tp)
        leo = self.latest_offsets(leader, [tp], DEBUGGING_REPLICA_ID).get(tp)
        return None if hw is None or leo is None else (hw[0], leo[0])

    def quorum_high_watermark(self) -> int:
        """The metadata quorum's high watermark (DescribeQuorum); raises what the client raises."""
        q = self.admin.describe_metadata_quorum()
        hw: int = q["topics"][0]["partitions"][0]["high_watermark"]
        return hw
