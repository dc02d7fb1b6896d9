"""The request log source: the nodes' ``kafka-request.log`` and ``kafka-authorizer.log`` followed
(services/requests/follow.py) into the raw topic, so that the normalize agent appends each kept line's
``ClientRequest`` event to the one chain.

A kept line is an EVENT raw record holding its unchained event (as the offset sampler's), its base offset the line's
place among its log's kept lines (``Position.seq``: the normalizer appends it only past the last one the events topic
holds for that log, services/capture/logic.py). Lines not read are an EVENT raw record holding their CaptureGap of
source REQUEST_LOG (a gap of attribution, which the image and the checks pass over), its position the stretch's
place among those since the log's last kept line. Every record carries the follower's position after it in a header, so a restarted worker resumes each
log after the last record the raw topic holds for it (`last_positions`): nothing handed over twice, nothing skipped.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from schemas import codec as event_codec
from schemas.raw import RawRecord
from services.requests.files import LOG_NAMES, stated_node_id
from services.requests.follow import Item, Kept, LogFollower, Lost, Position

log = logging.getLogger(__name__)

# raw messages read back for the logs' positions when the events topic holds no line of them (their first start; or
# their lines not normalized yet, which are this close to the raw topic's end unless the normalizer lags this far)
FIRST_START_SCAN = 20_000
MARK_SECONDS = 60.0  # a log's position is sent at least this often when it moved with nothing kept (Mark)
LOG_HEADER = "ctrlaudit-request-log"  # which log: {"cluster": ..., "node": ..., "log": ...}
POSITION_HEADER = "ctrlaudit-request-position"  # the follower's Position after the record (Position.to_json)


class _Message(Protocol):
    headers: Sequence[tuple[str, bytes]]


def log_key(cluster: str, node: int, name: str) -> bytes:
    return json.dumps({"cluster": cluster, "node": node, "log": name}, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Mark:
    """Where a log is read up to, nothing kept since its last record: sent once MARK_SECONDS have passed, so that a
    restart reads on from here, not from the last kept line (a quiet log's files may be rolled away and deleted by
    then, and a busy one's Fetch lines read again)."""
    position: Position


def to_raw(cluster: str, node: int, item: Item | Mark, now_ms: int) -> RawRecord:
    p = item.position
    if isinstance(item, Mark):  # no event, no reason: the normalizer passes it over
        return RawRecord(cluster, node, "EVENT", p.offset, p.seq, p.seq, -1, now_ms, now_ms, b"", p.file)
    if isinstance(item, Kept):
        e = item.event
        return RawRecord(cluster, node, "EVENT", p.offset, p.seq, p.seq, -1, e.event_time_ms, now_ms,
                         event_codec.encode(e), item.line.file)
    # lines lost: their CaptureGap, after the log's kept line `seq`, its `lost`-th stretch since (the normalizer's order)
    assert item.event is not None  # the follower makes each Lost with its event
    return RawRecord(cluster, node, "EVENT", p.lost, p.seq, p.seq, -1, item.event.event_time_ms, now_ms,
                     event_codec.encode(item.event), item.file)


def headers(cluster: str, node: int, item: Item | Mark) -> list[tuple[str, bytes]]:
    return [(LOG_HEADER, log_key(cluster, node, item.position.log)), (POSITION_HEADER, item.position.to_json())]


async def last_positions(newest_first: AsyncIterator[_Message], wanted: Iterable[bytes],
                         limit: int | None = None) -> dict[bytes, Position]:
    """The position in the newest raw message of each log `wanted` (log_key) holds, reading back until each is found,
    the topic's start or `limit` messages; a position that does not read is passed over (an older one is taken)."""
    left, found = set(wanted), {}
    n = 0
    async for msg in newest_first:
        n += 1
        if limit is not None and n > limit:
            break
        h = dict(msg.headers or ())
        key = h.get(LOG_HEADER)
        if key not in left or POSITION_HEADER not in h:
            continue
        try:
            found[key] = Position.from_json(h[POSITION_HEADER])
        except ValueError as exc:
            log.warning("request log source: a raw message's position is not read (%s): an older one is taken", exc)
            continue
        left.discard(key)
        if not left:
            break
    return found


def node_of(directory: Path, given: int | None, fallback: int) -> int | None:
    """The node whose logs `directory` holds: given, else its server.log's node.id, else `fallback` (>= 0)."""
    if given is not None:
        return given
    try:
        n = stated_node_id(directory)
    except Exception as exc:  # a server.log that cannot be read: said, and the fallback taken
        log.warning("request log source: %s: %s", directory, exc)
        n = None
    return n if n is not None else (fallback if fallback >= 0 else None)


async def run_requests(dirs: list[tuple[Path, int | None]], cluster: str, fallback_node: int,
                       read_newest_first: Callable[[], AsyncIterator[_Message]],
                       send: Callable[[RawRecord, list[tuple[str, bytes]]], Awaitable[Awaitable[object]]],
                       poll_interval: float, stopped: Callable[[], bool] = lambda: False,
                       streams: Callable[[], Awaitable[set[str]]] | None = None,
                       mark_seconds: float = MARK_SECONDS) -> None:
    """Follow every log of `dirs` into `send` in order, a log's records delivered before it is polled again.
    `streams`: the request log streams the events topic holds lines of (its last progress header); when it holds
    none of these logs', the raw topic is read back only FIRST_START_SCAN messages for their positions (a first
    start over a long raw topic of metadata batches would read it all), else to its start."""
    nodes: dict[Path, int] = {}
    while not stopped():
        for d, given in dirs:
            if d not in nodes:
                n = node_of(d, given, fallback_node)
                if n is not None:
                    nodes[d] = n
        if len(nodes) == len(dirs):
            break
        missing = [str(d) for d, _ in dirs if d not in nodes]
        log.warning("request log source: no node id for %s yet (no server.log there states node.id): waiting "
                    "(CTRLAUDIT_REQUEST_LOG_DIRS=DIR=ID says it)", ", ".join(missing))
        await asyncio.sleep(10)
    keys = {(d, name): log_key(cluster, nodes[d], name) for d, _ in dirs for name in LOG_NAMES}
    held = await streams() if streams is not None else None
    known = held is None or any(f"requests:{nodes[d]}:{name}" in held for d, _ in dirs for name in LOG_NAMES)
    resume = await last_positions(read_newest_first(), keys.values(), None if known else FIRST_START_SCAN)
    followers = [(nodes[d], LogFollower(d, name, nodes[d], cluster, resume.get(keys[(d, name)])))
                 for d, _ in dirs for name in LOG_NAMES]
    for node, f in followers:
        p = f.pos
        log.info("request log source: %s (node %d, cluster %s) %s", f.live, node, cluster,
                 f"after line {p.line} of {p.file} ({p.seq} lines kept)" if p.ino else "from its start")
    loop = asyncio.get_running_loop()
    sent = [(f.pos, time.monotonic()) for _, f in followers]  # each log's last position sent, and when
    while not stopped():
        busy = False
        for k, (node, f) in enumerate(followers):
            items: list[Item | Mark] = list(await loop.run_in_executor(None, f.poll))
            if not items:
                last, at = sent[k]
                if f.pos == last or time.monotonic() - at < mark_seconds:
                    continue
                items = [Mark(f.pos)]
            busy = True
            now = int(time.time() * 1000)
            futures = []
            for item in items:
                if isinstance(item, Lost):
                    log.warning("request log of node %d: %s", node, item)
                futures.append(await send(to_raw(cluster, node, item, now), headers(cluster, node, item)))
            await asyncio.gather(*futures)
            sent[k] = (items[-1].position, time.monotonic())
        if not busy:
            await asyncio.sleep(poll_interval)
