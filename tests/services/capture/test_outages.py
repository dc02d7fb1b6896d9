"""A broker's outage in capture's log: one WARNING per outage, the retries dropped, other lines untouched."""
from __future__ import annotations

import logging

import pytest

from services.capture.outages import OutageLog, say_outages_once


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def outages(caplog: pytest.LogCaptureFixture):
    clock = Clock()
    outage = OutageLog(quiet_s=30, clock=clock)
    loggers = [logging.getLogger(n) for n in ("aiokafka.client", "aiokafka.consumer.fetcher", "kafka.net.manager")]
    for lg in loggers:
        lg.addFilter(outage)
    caplog.set_level(logging.DEBUG)
    yield clock, caplog
    for lg in loggers:
        lg.removeFilter(outage)


def test_one_warning_per_outage_per_node(outages) -> None:
    clock, caplog = outages
    client = logging.getLogger("aiokafka.client")
    for _ in range(50):  # a retry every 0.1 s for 5 s
        client.error("Unable connect to node with id %s: %s", 3, "[Errno 111] Connect call failed ('127.0.0.1', 9)")
        clock.now += 0.1
    logging.getLogger("aiokafka.consumer.fetcher").error("Failed fetch messages from %s: %s", 3, "NodeNotReadyError")
    client.error("Unable connect to node with id %s: %s", 2, "[Errno 111]")  # another node: its own outage
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert len(said) == 2, said
    assert said[0][0] == "WARNING" and said[0][1].startswith(
        "node 3 unreachable ([Errno 111] Connect call failed ('127.0.0.1', 9)): expected while that broker is down")
    assert said[1][0] == "WARNING" and said[1][1].startswith("node 2 unreachable ([Errno 111])")

    clock.now += 31  # node 3 quiet for longer than the window: back; its next failure is a new outage
    caplog.clear()
    client.error("Unable connect to node with id %s: %s", 3, "[Errno 111]")
    assert [r.getMessage().split(": expected")[0] for r in caplog.records] == ["node 3 unreachable ([Errno 111])"]
    assert "50 retries of its previous outage not logged" in caplog.records[0].getMessage()


def test_other_lines_pass_untouched(outages) -> None:
    _, caplog = outages
    logging.getLogger("aiokafka.client").error("Unexpected error in %s", "something else")
    logging.getLogger("kafka.net.manager").error("Bootstrap failed: %s", "no brokers")
    logging.getLogger("services.capture.agents").error("Unable connect to node with id 1: x")  # not a client's
    logging.getLogger("aiokafka.client").debug("Unable connect to node with id 1: x")  # below WARNING: as it is
    assert [(r.levelname, r.name) for r in caplog.records] == [
        ("ERROR", "aiokafka.client"), ("ERROR", "kafka.net.manager"), ("ERROR", "services.capture.agents"),
        ("DEBUG", "aiokafka.client")]


def test_installed_on_every_client_logger() -> None:
    outage = say_outages_once()
    try:
        for name in ("aiokafka.client", "aiokafka.consumer.fetcher", "kafka.net.connection", "kafka.net.manager"):
            assert outage in logging.getLogger(name).filters
    finally:
        for name in ("aiokafka.client", "aiokafka.consumer.fetcher", "kafka.net.connection", "kafka.net.manager"):
            logging.getLogger(name).removeFilter(outage)
