"""A synthetic metadata log for tests and for bench/decode.py (timings live in bench/ only).

The mix imitates a busy cluster's log: mostly PartitionChangeRecords (ISR/leader deltas) and
NoOps, some PartitionRecords and broker heartbeats' registration changes, in batches of 1-100
records as the controller writes them."""

from __future__ import annotations

import random
from pathlib import Path
from typing import cast

from services.kraft.batch import build_batch
from services.kraft.fields import Message
from services.kraft.messages import CATALOGUE
from services.kraft.wire import uuid_str, write_uvarint


def _value(name: str, version: int, data: Message) -> bytes:
    mv = CATALOGUE[(name, version)]
    api_key = cast(int, mv.api_key)  # the log's records are all metadata records
    return write_uvarint(1) + write_uvarint(api_key) + write_uvarint(version) + mv.encode(data)


def synthetic_log(path: Path, n_records: int, seed: int = 1) -> int:
    rnd = random.Random(seed)
    topics = [uuid_str(rnd.randbytes(16)) for _ in range(50)]
    dirs = [uuid_str(rnd.randbytes(16)) for _ in range(3)]
    out = bytearray()
    offset = 0
    ts = 1_700_000_000_000
    while offset < n_records:
        size = min(rnd.choice([1, 1, 3, 10, 50, 100]), n_records - offset)
        values = []
        for _ in range(size):
            k = rnd.random()
            t, p = rnd.choice(topics), rnd.randrange(100)
            if k < 0.55:
                values.append(_value("PartitionChangeRecord", 2, {
                    "partitionId": p, "topicId": t, "isr": rnd.sample([1, 2, 3], rnd.randint(1, 3)),
                    "leader": rnd.choice([-2, 1, 2, 3])}))
            elif k < 0.8:
                values.append(_value("NoOpRecord", 0, {}))
            elif k < 0.9:
                values.append(_value("PartitionRecord", 2, {
                    "partitionId": p, "topicId": t, "replicas": [1, 2, 3], "isr": [1, 2, 3],
                    "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
                    "partitionEpoch": 0, "directories": dirs}))
            else:
                values.append(_value("BrokerRegistrationChangeRecord", 0, {
                    "brokerId": rnd.randint(1, 3), "brokerEpoch": rnd.randint(1, 10**6),
                    "fenced": rnd.choice([-1, 1])}))
        out += build_batch([(None, v) for v in values], base_offset=offset, leader_epoch=1,
                           timestamp=ts)
        offset += size
        ts += 500
    path.write_bytes(out)
    return offset
