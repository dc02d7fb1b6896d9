"""The offset sampler: HW from each partition's leader, then the LEO of every replica.

Method: two ListOffsets requests per broker and round (services/capture/kafka_protocol.py):
1. to each partition's leader, replica id -1 (a consumer), LATEST, READ_UNCOMMITTED: the high
   watermark, with the leader epoch;
2. afterwards, to every broker holding a replica, replica id -2 (ListOffsetsRequest.DEBUGGING_REPLICA_ID):
   the broker answers from its local replica even when it is a follower, and for a non-consumer
   replica id LATEST means the replica's log end offset (ReplicaManager.fetchOffsetForTimestamp:
   no isolation level -> localLog.logEndOffset).
DescribeLogDirs was rejected: it reports sizes and an OffsetLag only for future (moving) replicas.
HW is read strictly before the LEOs (LEOs only grow, except a truncation that stays at or above HW),
so a healthy partition can never show HW > min LEO of its ISR; the order is recorded in the event
(sample_order HW_THEN_LEO). A replica whose broker does not answer gets LEO -1.

The samples go to the raw topic as EVENT RawRecords; the normalize agent chains them.
Run: ``python -m services.capture sampler`` (rate: CTRLAUDIT_SAMPLE_INTERVAL seconds).
"""
from __future__ import annotations

import logging
import signal
import time
from collections import defaultdict
from pathlib import Path

import typer

from schemas import codec as event_codec, entry, names
from schemas.errors import ContractError
from schemas.event_ids import event_id
from schemas.events import ControllerEvent, OffsetSample, ReplicaOffset, SourceKind, SourcePosition
from services.capture.kafka_protocol import (
    CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID, Offsets, PartitionInfo, ProtocolClient,
)
from services.capture import connect
from services.capture.security import ClientSecurity
from schemas.raw import RawRecord
from services.capture.serializers import encode_raw
from services.capture.settings import Settings
from services.kraft.offline import cluster_id_of

log = logging.getLogger(__name__)
METADATA_MAX_AGE_MS = 5000


def _now() -> int:
    return int(time.time() * 1000)


class OffsetSampler:
    def __init__(self, bootstrap_servers: str, cluster_id: str, topics: list[str] | None = None,
                 security: ClientSecurity | None = None) -> None:
        # Fenced brokers are left out of metadata responses: with kafka-python's default age (5 min) a
        # broker fenced at the last refresh stays unknown, and its LEOs -1, long after it is back.
        self.client = ProtocolClient(bootstrap_servers, security, client_id="ctrlaudit-sampler",
                                     metadata_max_age_ms=METADATA_MAX_AGE_MS)
        _ = self.client.admin  # connects now: a cluster that does not answer stops the sampler before its rounds
        self.cluster_id = cluster_id
        self.topics = topics
        self.round = 0

    def close(self) -> None:
        self.client.close()

    def partitions(self) -> list[PartitionInfo]:
        return self.client.partitions(self.topics)

    def sample(self) -> list[OffsetSample]:
        """One round: every HW first (from the leaders), then every replica's LEO."""
        for attempt in range(4):  # metadata from a node that does not answer (paused, dying): ask again
            try:
                parts = [p for p in self.partitions() if p.leader >= 0]
                break
            except Exception as exc:
                if attempt == 3:
                    raise
                log.debug("describe_topics failed (%s); retrying", exc)
        by_leader: defaultdict[int, list[tuple[str, int]]] = defaultdict(list)
        for p in parts:
            by_leader[p.leader].append((p.topic, p.partition))
        hw: Offsets = {}
        for node, tps in by_leader.items():
            hw.update(self.client.latest_offsets(node, tps, CONSUMER_REPLICA_ID))
        by_replica: defaultdict[int, list[tuple[str, int]]] = defaultdict(list)
        for p in parts:
            for r in p.replicas:
                by_replica[r].append((p.topic, p.partition))
        leo: dict[tuple[int, str, int], tuple[int, int | None, int]] = {}
        for node, tps in by_replica.items():
            for tp, v in self.client.latest_offsets(node, tps, DEBUGGING_REPLICA_ID).items():
                leo[(node,) + tp] = v
        out = []
        for p in parts:
            h = hw.get((p.topic, p.partition))
            if h is None:
                continue
            reps = tuple(ReplicaOffset(r, *(leo[(r, p.topic, p.partition)][::2]) if (r, p.topic, p.partition) in leo
                                       else (-1, _now()))
                         for r in p.replicas)
            out.append(OffsetSample(p.topic, p.partition, p.leader, h[1] if h[1] is not None else -1,
                                    h[0], h[2], reps))
        return out

    def events(self, samples: list[OffsetSample], round_ms: int) -> list[ControllerEvent]:
        out = []
        for i, s in enumerate(samples):
            src = SourcePosition(SourceKind.OFFSET_SAMPLER, round_ms, i)
            out.append(ControllerEvent(event_id(self.cluster_id, src), self.cluster_id, 0, src, s.hw_time_ms, _now(),
                                       -1, -1, s))
        return out

    def raw_records(self, events: list[ControllerEvent]) -> list[RawRecord]:
        return [RawRecord(self.cluster_id, -1, "EVENT", 0, e.source.offset, e.source.offset, -1, e.event_time_ms,
                          _now(), event_codec.encode(e)) for e in events]


def run(settings: Settings, cluster_id: str, rounds: int | None = None) -> int:
    from confluent_kafka import Producer  # extra: capture

    security = settings.security
    sampler = OffsetSampler(settings.bootstrap_servers, cluster_id, security=security)
    conf, access = connect.config(settings.bootstrap_servers, security,
                                  extra={"acks": "all", "enable.idempotence": True})
    producer = Producer(conf)
    stop = {"now": False}
    old = {s: signal.signal(s, lambda *_: stop.update(now=True)) for s in (signal.SIGTERM, signal.SIGINT)}
    n = 0
    try:
        while not stop["now"] and (rounds is None or n < rounds):
            started = time.monotonic()
            round_ms = _now()
            try:
                samples = sampler.sample()
            except Exception as exc:
                log.warning("sample round failed: %s", exc)
                samples = []
            for r in sampler.raw_records(sampler.events(samples, round_ms)):
                producer.produce(settings.raw_topic, key=cluster_id.encode(), value=encode_raw(r))
            producer.flush(30)
            access.check()  # refused credentials: stop with one line, do not retry forever
            n += 1
            time.sleep(max(0.0, settings.sample_interval - (time.monotonic() - started)))
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        sampler.close()
    return n


cli = entry.app("The offset sampler.")


@cli.command()
def sampler(
    bootstrap_server: str | None = typer.Option(None, "--bootstrap-server",
                                                help="Kafka bootstrap servers (env CTRLAUDIT_BOOTSTRAP_SERVERS)."),
    cluster_id: str | None = typer.Option(None, "--cluster-id",
                                          help="Default: CTRLAUDIT_CLUSTER_ID, else meta.properties of "
                                               "CTRLAUDIT_METADATA_DIR."),
    interval: float | None = typer.Option(None, "--interval", help="Seconds between rounds "
                                                                    "(env CTRLAUDIT_SAMPLE_INTERVAL)."),
    rounds: int | None = typer.Option(None, "--rounds", help="Stop after N rounds (default: run until stopped)."),
    command_config: str | None = typer.Option(None, "--command-config",
                                              help="Kafka client properties file (env CTRLAUDIT_COMMAND_CONFIG)."),
) -> None:
    """Sample every partition's high watermark, then every replica's log end offset, into the raw topic."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:  # a bad setting or properties file, refused credentials, no cluster: one line, not a traceback
        s = Settings().replace(bootstrap_servers=bootstrap_server, sample_interval=interval,
                               command_config=command_config)
        cluster: str | None = (names.cluster_id(cluster_id, "--cluster-id") if cluster_id is not None
                               else s.cluster_id)
        if s.cluster_id and cluster == s.cluster_id:
            names.cluster_id(cluster, "CTRLAUDIT_CLUSTER_ID")
        if not cluster and s.metadata_dir:
            cluster = cluster_id_of([Path(s.metadata_dir)])  # checked there, naming the meta.properties
        # within CTRLAUDIT_CONNECT_TIMEOUT, not kafka-python's 30 s bootstrap and its traceback
        connect.require_reachable(s.bootstrap_servers, s.security)
        run(s, cluster or "unknown-cluster", rounds)
    except ContractError as exc:
        raise SystemExit(f"ctrlaudit sampler: {exc}") from None
    except Exception as exc:
        # kafka-python's errors (the cluster went away between the check and the first request)
        if type(exc).__module__.split(".")[0] not in ("kafka", "confluent_kafka"):
            raise
        raise SystemExit(f"ctrlaudit sampler: Kafka at {s.bootstrap_servers}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    return entry.run(cli, argv, "python -m services.capture sampler", "ctrlaudit sampler")
