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
    loggers = [logging.getLogger(n) for n in ("aiokafka", "aiokafka.consumer.fetcher", "aiokafka.consumer.group_coordinator", "kafka.net.manager")]
    for lg in loggers:
        lg.addFilter(outage)
    caplog.set_level(logging.DEBUG)
    yield clock, caplog
    for lg in loggers:
        lg.removeFilter(outage)


def test_one_warning_per_outage_per_node(outages) -> None:
    clock, caplog = outages
    client = logging.getLogger("aiokafka")
    for _ in range(50):  # a retry every 0.1 s for 5 s
        client.error("Unable connect to node with id %s: %s", 3, "[Errno 111] Connect call failed ('127.0.0.1', 9)")
        clock.now += 0.1
    logging.getLogger("aiokafka.consumer.fetcher").error("Failed fetch messages from %s: %s", 3, "NodeNotReadyError")
    coordinator = logging.getLogger("aiokafka.consumer.group_coordinator")
    coordinator.error("Group Coordinator Request failed: %s", "NodeNotReadyError: Attempt to send a request to "
                      "node which is not ready (node id 3).")
    coordinator.error("Error sending %s to node %s [%s] -- marking coordinator dead", "OffsetCommitRequest", 3,
                      "KafkaConnectionError: Connection at 127.0.0.1:9 closed")
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
    assert "52 retries of its previous outage not logged" in caplog.records[0].getMessage()


def test_other_lines_pass_untouched(outages) -> None:
    _, caplog = outages
    logging.getLogger("aiokafka").error("Unexpected error in %s", "something else")
    logging.getLogger("kafka.net.manager").error("Bootstrap failed: %s", "no brokers")
    logging.getLogger("services.capture.agents").error("Unable connect to node with id 1: x")  # not a client's
    logging.getLogger("aiokafka").debug("Unable connect to node with id 1: x")  # below WARNING: as it is
    assert [(r.levelname, r.name) for r in caplog.records] == [
        ("ERROR", "aiokafka"), ("ERROR", "kafka.net.manager"), ("ERROR", "services.capture.agents"),
        ("DEBUG", "aiokafka")]


def test_the_loggers_are_the_ones_the_clients_log_under() -> None:
    import aiokafka.client
    import aiokafka.consumer.fetcher
    import aiokafka.consumer.group_coordinator

    from services.capture.outages import RETRIED_FAILURES
    names = {name for name, _ in RETRIED_FAILURES}
    for module in (aiokafka.client, aiokafka.consumer.fetcher, aiokafka.consumer.group_coordinator):
        assert module.log.name in names, module.__name__


def test_installed_on_every_client_logger() -> None:
    outage = say_outages_once()
    try:
        # the names the clients log under (aiokafka's client module logs as "aiokafka")
        for name in ("aiokafka", "aiokafka.consumer.fetcher", "aiokafka.consumer.group_coordinator",
                     "kafka.net.connection", "kafka.net.manager", "kafka.net.transport"):
            assert outage in logging.getLogger(name).filters
    finally:
        for name in ("aiokafka", "aiokafka.consumer.fetcher", "aiokafka.consumer.group_coordinator",
                     "kafka.net.connection", "kafka.net.manager", "kafka.net.transport"):
            logging.getLogger(name).removeFilter(outage)
