"""The KRaft source: the live tail of a node's ``__cluster_metadata-0`` directory (services/kraft/live.py),
gated by the metadata quorum's high watermark, published record by record to the raw topic.

``run_source`` runs it inside the Faust worker: it polls the tail (which resumes after the raw topic's last
message) and sends each record as a RawRecord, awaiting its delivery before the next poll moves on.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from services.capture.serializers import RawRecord
from services.kraft.live import KRaftTail, TailRecord

if TYPE_CHECKING:
    from services.capture.security import ClientSecurity

log = logging.getLogger(__name__)


def raw_record(r: TailRecord) -> RawRecord:
    """The tail's record as the raw topic carries it (the same fields)."""
    return RawRecord(r.cluster_id, r.node_id, r.kind, r.position, r.base_offset, r.last_offset, r.epoch,
                     r.append_time_ms, r.read_time_ms, r.data, r.file, r.control_type, r.reason)


class _QuorumAdmin(Protocol):
    """kafka-python's KafkaAdminClient (untyped), the calls made here."""

    def describe_metadata_quorum(self) -> dict[str, Any]: ...  # DescribeQuorum's answer, as JSON
    def close(self) -> None: ...


class QuorumWatermark:
    """The metadata quorum's high watermark via DescribeQuorum (kafka-python admin)."""

    def __init__(self, bootstrap_servers: str, security: ClientSecurity | None = None) -> None:
        self.bootstrap = bootstrap_servers
        self.security = security  # None: PLAINTEXT
        self._admin: _QuorumAdmin | None = None
        self.last = 0

    def __call__(self) -> int:
        try:
            if self._admin is None:
                from kafka.admin import KafkaAdminClient

                from services.capture.security import ClientSecurity, kafka_python_kwargs
                self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000,
                                               client_id="ctrlaudit-source",
                                               **kafka_python_kwargs(self.security or ClientSecurity()))
            q = self._admin.describe_metadata_quorum()
            hw = q["topics"][0]["partitions"][0]["high_watermark"]
            self.last = max(self.last, hw)
        except Exception as exc:  # a broker down or a failover in progress: keep the last known mark
            log.debug("DescribeQuorum failed: %s", exc)
            if self._admin is not None:
                try:
                    self._admin.close()
                except Exception:
                    pass
                self._admin = None
        return self.last

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()


def source_loop_step(tail: KRaftTail, gate: Callable[[], int] | None) -> list[RawRecord]:
    return [raw_record(r) for r in tail.poll(gate() if gate is not None else None)]


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
