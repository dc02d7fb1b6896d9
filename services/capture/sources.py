"""The KRaft source: the live tail of a node's ``__cluster_metadata-0`` directory (services/kraft/live.py),
gated by the metadata quorum's high watermark, published record by record to the raw topic.

``run_source`` runs it inside the Faust worker: it polls the tail (which resumes after the raw topic's last
message) and sends each record as a RawRecord, awaiting its delivery before the next poll moves on.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from services.capture.kafka_protocol import ProtocolClient
from services.capture.security import ClientSecurity
from schemas.raw import RawRecord
from services.kraft.live import KRaftTail

log = logging.getLogger(__name__)


class QuorumWatermark:
    """The metadata quorum's high watermark (DescribeQuorum, services/capture/kafka_protocol.py), the gate
    below which the tail's batches are committed."""

    def __init__(self, bootstrap_servers: str, security: ClientSecurity | None = None) -> None:
        self.client = ProtocolClient(bootstrap_servers, security, client_id="ctrlaudit-source")
        self.last = 0

    def __call__(self) -> int:
        try:
            self.last = max(self.last, self.client.quorum_high_watermark())
        except Exception as exc:  # a broker down or a failover in progress: keep the last known mark
            log.debug("DescribeQuorum failed: %s", exc)
            try:
                self.client.close()  # a new connection at the next call
            except Exception:
                pass
        return self.last

    def close(self) -> None:
        self.client.close()


def source_loop_step(tail: KRaftTail, gate: Callable[[], int] | None) -> list[RawRecord]:
    return tail.poll(gate() if gate is not None else None)


async def run_source(tail: KRaftTail, send: Callable[[RawRecord], Awaitable[Awaitable[object]]],
                     gate: Callable[[], int] | None, poll_interval: float, stopped: Callable[[], bool]) -> None:
    """Poll the tail and send in order; a send is awaited before the next poll moves the position on. `send`
    queues a record and gives what is done when it is delivered (Faust's topic.send)."""
    loop = asyncio.get_running_loop()
    while not stopped():
        batch = await loop.run_in_executor(None, source_loop_step, tail, gate)
        futures = [await send(r) for r in batch]
        if futures:
            await asyncio.gather(*futures)
        else:
            await asyncio.sleep(poll_interval)
