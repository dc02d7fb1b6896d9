"""Whether the nodes' clocks agree, from the one thing the logs say twice: a request a broker forwarded to the
controller in an Envelope (KRaft; a ZooKeeper-mode cluster with forwarding on). The broker's request log has the
client's request (``isForwarded`` false), the controller's the same request unwrapped (``isForwarded`` true), with
the same principal, client id, correlation id, API and body.

The controller answers the Envelope before the broker can answer its client, but it writes its line only once its
answer has been sent, and the broker may have answered its client and written its own line by then: on one node,
with one clock, a real cluster (Kafka 4.3.1) wrote the broker's line of AlterUserScramCredentials 1 ms before the
controller's. So within `TOLERANCE_MS` the order says nothing. A broker line earlier than its controller line by d
ms beyond that says the two clocks disagree by at least d ms: it is named (both lines), never corrected, since by
how much more cannot be told.
A pair is taken only when its key finds one line on each side: two candidates are not chosen between.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from schemas.requests.record import REQUEST_LOGGER, Body, RequestLine

TOLERANCE_MS = 100  # the controller's line may follow the broker's by the time its answer's send takes to complete
_Key = tuple[str, str | None, int | None, str | None, int | None, Body | None]


@dataclass(frozen=True, slots=True)
class Disagreement:
    broker: RequestLine
    controller: RequestLine

    @property
    def at_least_ms(self) -> int:
        return self.controller.time_ms - self.broker.time_ms

    def __str__(self) -> str:
        b, c = self.broker, self.controller
        return (f"{b.file}:{b.line} and {c.file}:{c.line}: the broker completed the request it forwarded "
                f"{self.at_least_ms} ms before the controller did: their clocks disagree by at least that much")


def _key(r: RequestLine) -> _Key:
    return (r.principal, r.client_id, r.correlation_id, r.api, r.api_version, r.body)


def pairs(records: Iterable[RequestLine]) -> list[tuple[RequestLine, RequestLine]]:
    """(broker line, controller line) of each forwarded request whose key finds exactly one line on each side."""
    sides: dict[_Key, tuple[list[RequestLine], list[RequestLine]]] = {}
    for r in records:
        if r.log != REQUEST_LOGGER or r.forwarded is None or r.api == "Envelope":
            continue
        sides.setdefault(_key(r), ([], []))[1 if r.forwarded else 0].append(r)
    return [(b[0], c[0]) for b, c in sides.values() if len(b) == 1 and len(c) == 1]


def disagreements(records: Iterable[RequestLine], tolerance_ms: int = TOLERANCE_MS) -> list[Disagreement]:
    """The forwarded pairs whose broker line is earlier than its controller line by more than `tolerance_ms`."""
    found = [Disagreement(b, c) for b, c in pairs(records) if c.time_ms - b.time_ms > tolerance_ms]
    return sorted(found, key=lambda d: (-d.at_least_ms, d.broker.file, d.broker.line))
