"""Noticing an archiver whose consumer is left without partitions while nobody archives the topic.

librdkafka has been seen (the Kafka 3.9 pipeline test in CI, 2026-11-27) to stay in its group with
nothing assigned for minutes after the group coordinator's broker was killed and restarted: the
archiver archived nothing while the events topic filled. Known librdkafka reports of the same shape:
confluentinc/librdkafka#3082, #3396.

A consumer without partitions is also normal: another archiver of the group may hold them (a
standby). So the archiver rejoins (closes its consumer and subscribes with a new one) only when
nobody archives: the group's committed offsets lag behind the topic's end and have not moved for
`after` seconds, or the group's offsets could not be read for that long. Sooner (`unserved_after`) when this
consumer has joined a stable group in which no member holds any partition of the topic while events wait:
the join is over and gave nobody the topic, so no standby is waiting for a busy archiver and a rejoin takes
partitions from no one. Seen in CI against Kafka 3.9 (2026-11-29): an archiver that subscribed once the
topic existed was assigned nothing for 60 s, and rejoining archived every event within a second. A consumer
still joining is left to join: on a loaded machine a first join (the offsets topic being created) takes
longer than the short wait, and rejoining then would only start it over.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

# partition -> (committed offset, or < 0 when none; low watermark; high watermark)
Progress = dict[int, tuple[int, int, int]]


def lagging(progress: Progress) -> bool:
    """Are there events on the topic past what the group has committed?"""
    return any(high > max(committed, low) for committed, low, high in progress.values())


@dataclass
class Stall:
    """Fed once per poll loop; `stalled` says when to rejoin. Probes at most once per `after` seconds."""

    after: float
    unserved_after: float = 10.0
    _since: float | None = None  # when the consumer was first seen without partitions
    _probed: float = 0.0
    _asked: float = 0.0  # when `served` was last asked
    _seen: Progress | None = None  # the previous probe's answer (None: unreadable)

    def stalled(self, now: float, assigned: bool, probe: Callable[[], Progress | None],
                served: Callable[[], bool | None] = lambda: None) -> bool:
        """`served`: does a member of the group hold the topic's partitions (None: not known, or the group
        is rebalancing)?"""
        if assigned:
            self.reset()
            return False
        if self._since is None:
            self._since = self._probed = self._asked = now
            self._seen = probe()
            return False
        if now - self._asked >= self.unserved_after:
            self._asked = now
            if served() is False:
                seen = probe()
                if seen is not None and lagging(seen):
                    return True
        if now - self._probed < self.after:
            return False
        previous, self._seen, self._probed = self._seen, probe(), now
        if self._seen is None:
            return previous is None  # unreadable twice, `after` seconds apart
        if previous is None or not lagging(self._seen):
            return False
        return {p: c for p, (c, _, _) in self._seen.items()} == {p: c for p, (c, _, _) in previous.items()}

    def reset(self) -> None:
        self._since = self._seen = None


def group_progress(consumer: Consumer, topic: str, timeout: float = 5.0) -> Progress | None:
    """The group's committed offsets and the topic's watermarks, asked of the cluster (None: no answer)."""
    from confluent_kafka import TopicPartition  # extra: capture

    try:
        md = consumer.list_topics(topic, timeout=timeout)
        parts = [TopicPartition(topic, p) for p in sorted(md.topics[topic].partitions)]
        committed = consumer.committed(parts, timeout=timeout)
        return {tp.partition: (tp.offset, *consumer.get_watermark_offsets(tp, timeout=timeout, cached=False))
                for tp in committed}
    except Exception:  # KafkaException, a topic gone from the metadata: not known now, asked again later
        return None


def group_served(admin: AdminClient, group: str, topic: str, member: str | None, timeout: float = 5.0) -> bool | None:
    """Does a member of `group` hold a partition of `topic`? Only a stable group that `member` (this consumer's
    member id) has joined says no: a consumer still joining is not assigned anything yet, and a group rebalancing
    or a cluster that does not answer is not known (None)."""
    from confluent_kafka import ConsumerGroupState  # extra: capture

    try:
        desc = admin.describe_consumer_groups([group], request_timeout=timeout)[group].result(timeout)
    except Exception:  # KafkaException, a timeout, a coordinator loading: not known now, asked again later
        return None
    if any(tp.topic == topic for m in desc.members for tp in (m.assignment.topic_partitions if m.assignment else [])):
        return True
    joined = bool(member) and any(m.member_id == member for m in desc.members)
    return False if joined and desc.state == ConsumerGroupState.STABLE else None
