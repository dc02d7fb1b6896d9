"""A broker that is down is said once per outage, at WARNING, not at every retry at ERROR.

While a broker is killed or restarting, the Kafka clients under capture (aiokafka under Faust, the sampler's
protocol client) log each failed connection and fetch attempt at ERROR, several times a second: hundreds of
lines for an outage capture rides out by retrying, drowning the lines that matter. This filter turns the first
such line of an outage into one WARNING that says so, and drops the retries that follow it; an outage ends
when the node has been quiet for `quiet_s` seconds, so the next failure after that is a new outage, said again.
Every other line, at every level, passes untouched.
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

# (logger, message pattern): group "node" names the node when the line does (else "node id N" in the line, else
# the address), group "why" the cause. The loggers are the clients' own names (aiokafka's client logs as
# "aiokafka").
RETRIED_FAILURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("aiokafka", re.compile(r"^Unable connect to node with id (?P<node>\S+): (?P<why>.*)$", re.S)),
    ("aiokafka.consumer.fetcher", re.compile(r"^Failed fetch (?:messages|offsets) from (?P<node>\S+): (?P<why>.*)$",
                                             re.S)),
    ("aiokafka.consumer.group_coordinator", re.compile(
        r"^(?:Error sending \S+ to node (?P<node>\S+) \[(?P<why>.*)\] -- marking coordinator dead"
        r"|Group Coordinator Request failed: (?P<why2>.*))$", re.S)),
    ("kafka.net.connection", re.compile(r"node_id=(?P<node>[^\s>]+).*: Connection lost: (?P<why>.*)$", re.S)),
    ("kafka.net.manager", re.compile(r"^Connection failed: (?P<why>.*)$", re.S)),
    ("kafka.net.transport", re.compile(r"^<KafkaTCPTransport \[(?P<address>[^\]<]+)<-\d+\]>: "
                                       r"(?:(?P<why>socket disconnected)|Abort \((?P<why2>.*)\))$", re.S)),
)
_NODE_ID = re.compile(r"node id (\d+)")


class OutageLog(logging.Filter):
    def __init__(self, quiet_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.quiet_s, self.clock = quiet_s, clock
        self.last_failure: dict[str, float] = {}  # node -> when it last failed
        self.retries: dict[str, int] = {}  # node -> failures dropped in its current outage

    def filter(self, record: logging.LogRecord) -> bool:
        pattern = next((p for name, p in RETRIED_FAILURES if record.name == name), None)
        if pattern is None or record.levelno < logging.WARNING:
            return True
        match = pattern.search(record.getMessage())
        if match is None:
            return True
        found = match.groupdict()
        node = found.get("node") or next(iter(_NODE_ID.findall(match.string)), None) or found.get("address") \
            or "a broker"
        why = (found.get("why") or found.get("why2") or "").strip()
        now = self.clock()
        last = self.last_failure.get(node)
        self.last_failure[node] = now
        if last is not None and now - last < self.quiet_s:
            self.retries[node] = self.retries.get(node, 0) + 1
            return False
        dropped = self.retries.pop(node, 0)
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        record.msg = (f"node {node} unreachable ({why}): expected while that broker is down or "
                      f"restarting; capture retries and says this once per outage (quiet {self.quiet_s:.0f} s ends it)"
                      + (f"; {dropped} retries of its previous outage not logged" if dropped else ""))
        record.args = ()
        return True


def say_outages_once(quiet_s: float = 30.0) -> OutageLog:
    """Put one OutageLog on every client logger whose retries it knows (one filter: one view of each node)."""
    outages = OutageLog(quiet_s)
    for name, _ in RETRIED_FAILURES:
        logging.getLogger(name).addFilter(outages)
    return outages
