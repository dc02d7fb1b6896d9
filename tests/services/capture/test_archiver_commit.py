"""The archiver's commit: transient coordinator errors are retried, then left to the next checkpoint;
other errors are raised."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from services.capture.archiver import commit


class _Consumer:
    def __init__(self, errors):
        self.errors, self.calls = list(errors), 0

    def commit(self, asynchronous=True):
        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))


def test_coordinator_loading_is_retried_until_the_commit_succeeds():
    c = _Consumer([KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR])
    assert commit(c, retry_seconds=5, pause=0) is True
    assert c.calls == 3


def test_a_commit_failing_past_the_retry_window_is_left_to_the_next_checkpoint():
    c = _Consumer([KafkaError.COORDINATOR_LOAD_IN_PROGRESS] * 10_000)
    assert commit(c, retry_seconds=0.05, pause=0.01) is False
    assert c.calls >= 2


def test_nothing_to_commit_is_fine_and_other_errors_raise():
    assert commit(_Consumer([KafkaError._NO_OFFSET]), pause=0) is True
    with pytest.raises(KafkaException):
        commit(_Consumer([KafkaError.GROUP_AUTHORIZATION_FAILED]), pause=0)
