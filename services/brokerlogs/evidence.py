"""What one line of a Kafka log says about controller state, in Kafka's own words (Kafka 2.8 to 4.x, ZooKeeper
mode and KRaft). Each message is read only for what it states; a field it does not state stays ``None``.

ZooKeeper-mode controller (``[Controller id=N epoch=E]`` in state-change.log, ``[Controller id=N]`` in
controller.log, whose ``kafka.controller`` logger Kafka's shipped config keeps at TRACE):
- ``Changed partition t-p state from NonExistentPartition to NewPartition with assigned replicas 1,2,3``
- ``Changed partition t-p from S to OnlinePartition with state LeaderAndIsr(leader=.., leaderEpoch=.., ...)``
- ``Partition t-p state changed to (Leader:..,ISR:..,LeaderEpoch:..,ZkVersion:..,ControllerEpoch:..) after
  removing replica R from the ISR`` (no ZkVersion before 3.1: ``Unnumbered``); ``ISR for partition t-p updated to
  LeaderAndIsr(...)`` (DEBUG; before 3.3 ``updated to [1,2] and zkVersion updated to [5]``)
- ``Updated leader epoch for partition t-p to LE, zkVersion=V`` (leader and ISR kept: Kafka's ``newEpoch``)
- ``Successfully updated assignment of partition t-p to ReplicaAssignment(replicas=.., addingReplicas=.., ...)``
- ``N successfully elected as the controller. Epoch incremented to E``; ``New topics: [...] ... Some(<id>)``;
  ``Deletion of topic t successfully completed``; ``Updated broker epochs cache: HashMap(1 -> 65, ...)``
KRaft controller (``[QuorumController id=N]``): ``In the new epoch E, the leader is N``, ``Replayed TopicRecord``,
``Replayed RemoveTopicRecord``, ``Replayed PartitionRecord for new partition ... PartitionRegistration(...)``,
``UNCLEAN partition change for t-p ...: isr: [1] -> [3], leader: 1 -> 3, ..., partitionEpoch: 1 -> 2``, ``Replayed
partition assignment change PartitionChangeRecord(...) for topic t. (..., partitionEpoch: N, ...)`` (3.9: without the
part in parentheses, so without the epoch), ``Successfully altered k out of m partition reassignment(s).``,
``Replayed ConfigRecord for ConfigResource(type=TOPIC, name='t') which set configuration k to v``; and, without a
prefix (PartitionChangeBuilder, 4.x), ``Setting new leader for topicId X, partition P ... Previous partition:
PartitionRegistration(...)``, the whole state an unclean election starts from.
A partition's leader (``[Partition t-p broker=N]``, logger ``kafka.cluster.Partition``, server.log, INFO): every ISR
change it made through AlterIsr/AlterPartition, once the controller committed it (2.7+; from 3.3 the ZooKeeper-mode
controller no longer logs these, and a KRaft controller logs them at DEBUG only): ``ISR updated to 3,2,1 and
version updated to [2]`` (2.8-3.0), ``... and version updated to 2`` (3.1-3.4), ``ISR updated to 3,2,1  and version
updated to 2`` or ``... 3,2 (under-min-isr) and version ...`` (3.5+).
Lines without a prefix (server.log): a replica's ``Created log for partition t-0 in DIR with properties {k=v, ...}``
(LogManager: its topic's overrides) and a ZooKeeper-mode broker's ``Registered broker N at path /brokers/ids/N with
addresses: ..., czxid (broker epoch): E`` (KafkaZkClient).
Brokers (``[Broker id=N]``, both modes): ``Leader t-p ... starts at leader epoch`` (leader, ISR), ``Follower t-p
starts at leader epoch`` (leader only), and ``Skipped the become-leader/follower state change ... partition state
LeaderAndIsrPartitionState(...)`` (3.x) or ``partition registration PartitionRegistration(...)`` (4.2+): whole; in
KRaft mode ``Creating new partition t-p with topic id X.`` (a replica made anew: its next line is not a change it
lived).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import fields, replace

from schemas.errors import ContractError
from schemas.events import LeaderRecoveryState
from services.brokerlogs.said import (  # noqa: F401 - the kinds are read from here too
    Assigned, AssignmentReplayed, BrokerRegistered, BrokersAdded, ByTopicId, ConfigStated, ControllerElected,
    ElrEnabled, Evidence, Ints, KRaftController, LiveBrokers, ReassignmentsAltered, ReplicaCreated, Seen,
    TopicConfigs, TopicCreated, TopicDeleted, Unnumbered, ZooKeeperController,
)

_PREFIX = re.compile(r"^\[(Controller id=(\d+)(?: epoch=(\d+))?|Broker id=(\d+)|QuorumController id=(\d+)|"
                     r"Topic Deletion Manager (\d+)|Partition (\S+)-(\d+) broker=(\d+))\] ")
_TP = r"(\S+)-(\d+)"
_TOPIC_ID = r"(?:Some\(([\w-]+)\)|None|([\w-]{22}))"


INT32, INT64 = range(-2**31, 2**31), range(-2**63, 2**63)


def node_of(message: str) -> int:
    """The node a message names in its prefix (the logIdent), or -1 (also for a number no node id can be)."""
    m = _PREFIX.match(message)
    if m is None:
        return -1
    digits = next(g for g in (m.group(2), m.group(4), m.group(5), m.group(6), m.group(9)) if g is not None)
    return int(digits) if len(digits) <= 10 and int(digits) in INT32 else -1


def _ints(text: str) -> Ints:
    return tuple(int(x) for x in re.findall(r"-?\d+", text))


def _recovery(text: str | None) -> LeaderRecoveryState | None:
    if text is None:
        return None
    return {"0": LeaderRecoveryState.RECOVERED, "1": LeaderRecoveryState.RECOVERING}.get(
        text, LeaderRecoveryState(text) if text in LeaderRecoveryState.__members__ else None)


def _fields(body: str) -> dict[str, str]:
    """``key=value, key=[a, b], key='x'`` (Kafka's generated toString and PartitionRegistration's)."""
    return {k: v for k, v in re.findall(r"(\w+)=(\[[^\]]*\]|'[^']*'|[^,()\s]+)", body)}


def _leader_and_isr(topic: str, partition: int, body: str, controller_epoch: int | None) -> Seen | None:
    """``LeaderAndIsr(leader=1, leaderEpoch=3, isrWithBrokerEpoch=List(BrokerState(brokerId=1, ...)), ...,
    partitionEpoch=7)`` (3.4+) or ``LeaderAndIsr(leader=1, leaderEpoch=3, isr=List(1, 2), zkVersion=7)``."""
    f = _fields(body)
    epoch = f.get("partitionEpoch", f.get("zkVersion"))
    if epoch is None or "leader" not in f or "leaderEpoch" not in f:
        return None
    isr_part = re.search(r"isrWithBrokerEpoch=List\((.*?)\)\)?, leaderRecoveryState", body)
    if isr_part is not None:
        isr = tuple(int(x) for x in re.findall(r"brokerId=(\d+)", isr_part.group(1)))
    else:
        m = re.search(r"\bisr=List\(([^)]*)\)", body)
        if m is None:
            return None
        isr = _ints(m.group(1))
    return Seen(topic, partition, int(epoch), leader=int(f["leader"]), leader_epoch=int(f["leaderEpoch"]), isr=isr,
                recovery=_recovery(f.get("leaderRecoveryState")) or LeaderRecoveryState.RECOVERED,
                controller_epoch=controller_epoch)


_LICE = re.compile(r"\(Leader:(-?\d+),ISR:([\d,]*),(?:LeaderRecoveryState:(\w+),)?LeaderEpoch:(\d+),"
                   r"ZkVersion:(\d+),ControllerEpoch:(\d+)\)")


# the same before 3.1: no ZkVersion (and no LeaderRecoveryState, which came with 3.2)
_LICE_UNNUMBERED = re.compile(r"\(Leader:(-?\d+),ISR:([\d,]*),LeaderEpoch:(\d+),ControllerEpoch:(\d+)\)")


def _lice(topic: str, partition: int, m: re.Match[str]) -> Seen:
    """``(Leader:2,ISR:2,3,LeaderRecoveryState:RECOVERED,LeaderEpoch:1,ZkVersion:1,ControllerEpoch:1)``."""
    return Seen(topic, partition, int(m.group(5)), leader=int(m.group(1)), leader_epoch=int(m.group(4)),
                isr=_ints(m.group(2)), recovery=_recovery(m.group(3)) or LeaderRecoveryState.RECOVERED,
                controller_epoch=int(m.group(6)))


def _assignment(topic: str, partition: int, body: str, topic_id: str | None = None) -> Assigned | None:
    m = re.fullmatch(r"replicas=([\d,]*), addingReplicas=([\d,]*), removingReplicas=([\d,]*)", body)
    if m is None:
        return None
    return Assigned(topic, partition, _ints(m.group(1)), _ints(m.group(2)), _ints(m.group(3)), topic_id)


def _registration(topic: str, partition: int, body: str, topic_id: str | None) -> Seen | None:
    """``PartitionRegistration(replicas=[..], directories=[..], isr=[..], removingReplicas=[..], addingReplicas=
    [..], elr=[..], lastKnownElr=[..], leader=1, leaderRecoveryState=RECOVERED, leaderEpoch=0, partitionEpoch=1)``
    or ``LeaderAndIsrPartitionState(topicName=.., partitionIndex=0, controllerEpoch=1, leader=1, leaderEpoch=0,
    isr=[..], partitionEpoch=1, replicas=[..], addingReplicas=[..], removingReplicas=[..], isNew=false, ...)``."""
    f = _fields(body)
    try:
        return Seen(topic, partition, int(f["partitionEpoch"]), topic_id=topic_id, leader=int(f["leader"]),
                    leader_epoch=int(f["leaderEpoch"]), isr=_ints(f["isr"]), replicas=_ints(f["replicas"]),
                    adding=_ints(f.get("addingReplicas", "")), removing=_ints(f.get("removingReplicas", "")),
                    elr=_ints(f["elr"]) if "elr" in f else None,
                    last_known_elr=_ints(f["lastKnownElr"]) if "lastKnownElr" in f else None,
                    recovery=_recovery(f.get("leaderRecoveryState")),
                    controller_epoch=int(f["controllerEpoch"]) if int(f.get("controllerEpoch", -1)) >= 0 else None)
    except (KeyError, ValueError):
        return None


def _unclean(topic: str, partition: int, diff: str, topic_id: str) -> Seen | None:
    """``isr: [1] -> [3], leader: 1 -> 3, leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 0 -> 1,
    partitionEpoch: 1 -> 2`` (PartitionRegistration.diff: only what changed)."""
    changes = dict(re.findall(r"(\w+): (\[[^\]]*\]|\S+?) -> (?:\[[^\]]*\]|[^,\s]+)", diff))
    new = dict(re.findall(r"(\w+): (?:\[[^\]]*\]|\S+?) -> (\[[^\]]*\]|[^,\s]+)", diff))
    if "partitionEpoch" not in new:
        return None
    lists = {name: _ints(new[key]) for key, name in (
        ("isr", "isr"), ("replicas", "replicas"), ("addingReplicas", "adding"), ("removingReplicas", "removing"),
        ("elr", "elr"), ("lastKnownElr", "last_known_elr")) if key in new}
    numbers = {name: int(new[key]) for key, name in (("leader", "leader"), ("leaderEpoch", "leader_epoch"))
               if key in new}
    return Seen(topic, partition, int(new["partitionEpoch"]), topic_id=topic_id,
                from_epoch=int(changes["partitionEpoch"]), isr=lists.get("isr"), replicas=lists.get("replicas"),
                adding=lists.get("adding"), removing=lists.get("removing"), elr=lists.get("elr"),
                last_known_elr=lists.get("last_known_elr"), leader=numbers.get("leader"),
                leader_epoch=numbers.get("leader_epoch"), recovery=_recovery(new.get("leaderRecoveryState")))


class UnreadableLine(ContractError):
    """A message in a form read here whose values no Kafka writes (a number beyond its type): a damaged or
    forged line, not evidence."""


def _ints_of(value: object) -> Iterator[int]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _ints_of(v)


def _checked(said: list[Evidence]) -> list[Evidence]:
    """`said`, when every number in it fits the type Kafka gives it (int32; a broker's epoch, a czxid: int64)."""
    for ev in said:
        if isinstance(ev, ByTopicId):
            _checked([ev.seen])
            continue
        for f in fields(ev):
            # a broker's epoch is its registration's czxid; LiveBrokers pairs ids with such epochs
            wide = isinstance(ev, LiveBrokers) or (isinstance(ev, BrokerRegistered) and f.name == "epoch")
            bounds = INT64 if wide else INT32
            bad = next((n for n in _ints_of(getattr(ev, f.name)) if n not in bounds), None)
            if bad is not None:
                raise UnreadableLine(f"{f.name} {str(bad)[:20]}{'…' if len(str(bad)) > 20 else ''} is beyond "
                                     f"the {'64' if bounds is INT64 else '32'}-bit integer Kafka writes there")
    return said


# PartitionChangeBuilder (INFO, 3.9 and 4.x): the state the controller elects from, whole, named by topic id
_PREVIOUS = re.compile(r"^Setting new leader for topicId ([\w-]+), partition (\d+) to -?\d+ using an unclean "
                       r"election\. Previous partition: PartitionRegistration\((.*?)\), change record: ")
_CREATED_LOG = re.compile(rf"^Created log for partition {_TP} in \S+ with properties \{{(.*)\}}\.?$")
_REGISTERED = re.compile(r"^Registered broker (\d+) at path /brokers/ids/\d+ with addresses: .*, "
                         r"czxid \(broker epoch\): (-?\d+)$")


def evidence(message: str) -> list[Evidence]:
    """What a log message (its text after the level) says, or [] for a message that says nothing of state.
    UnreadableLine when it is in a form read here but holds what no Kafka writes."""
    try:
        return _checked(_said(message))
    except ValueError as exc:  # int() of more digits than Python converts (4300)
        raise UnreadableLine(f"a number longer than any Kafka writes ({str(exc)[:60]})") from None


def _said(message: str) -> list[Evidence]:
    prefix = _PREFIX.match(message)
    if prefix is None:
        previous = _PREVIOUS.match(message)  # KRaft's PartitionChangeBuilder: no logIdent either
        if previous is not None:
            seen = _registration("", int(previous.group(2)), previous.group(3), previous.group(1))
            return [ByTopicId(previous.group(1), seen)] if seen else []
        created = _CREATED_LOG.match(message)  # LogManager's and KafkaZkClient's: no logIdent
        if created is None:
            registered = _REGISTERED.match(message)
            return [BrokerRegistered(int(registered.group(1)), int(registered.group(2)))] if registered else []
        pairs = re.findall(r"([\w.]+)=(.*?)(?=, [\w.]+=|$)", created.group(3))
        return [TopicConfigs(created.group(1), tuple((k, v) for k, v in pairs if v != "(redacted)"))]
    text = message[prefix.end():]
    said: list[Evidence] = [ZooKeeperController()] if prefix.group(2) is not None else \
        [KRaftController()] if prefix.group(5) is not None else []
    for pattern, reader in _PATTERNS:
        m = pattern.search(text)
        if m is not None:
            return said + reader(m, prefix)
    return said


def _broker_id(prefix: re.Match[str]) -> int | None:
    return int(prefix.group(4)) if prefix.group(4) is not None else None


def _controller_epoch(prefix: re.Match[str]) -> int | None:
    return int(prefix.group(3)) if prefix.group(3) is not None else None


def _new(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [Assigned(m.group(1), int(m.group(2)), _ints(m.group(3)))]


def _online(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    seen = _leader_and_isr(m.group(1), int(m.group(2)), m.group(3), controller_epoch=_controller_epoch(prefix))
    return [seen] if seen else []


def _offline_replica(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    lice = _LICE.fullmatch(m.group(3))
    if lice:
        return [_lice(m.group(1), int(m.group(2)), lice)]
    old = _LICE_UNNUMBERED.fullmatch(m.group(3))
    if old:
        return [Unnumbered(m.group(1), int(m.group(2)), int(old.group(1)), int(old.group(3)), _ints(old.group(2)))]
    return []


def _leader_epoch(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    # KafkaController.updateLeaderEpoch writes LeaderAndIsr.newEpoch: leader and ISR as they were
    epoch = int(m.group(4))
    return [Seen(m.group(1), int(m.group(2)), epoch, leader_epoch=int(m.group(3)), from_epoch=epoch - 1)]


def _isr_altered(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    # Kafka 2.7-3.2 (AlterIsr through the controller): a leader's ISR change, written only if the znode is still
    # at the version the leader read (zkVersion - 1) and never with another leader epoch: leader and epoch kept
    epoch = int(m.group(4))
    return [Seen(m.group(1), int(m.group(2)), epoch, isr=_ints(m.group(3)), from_epoch=epoch - 1)]


def _leader_isr(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    # Partition.scala, after the controller answered the leader's AlterIsr/AlterPartition: the request named
    # the leader epoch and the partition epoch the leader held (a write of any other is refused), and every
    # committed change moves the partition epoch by one. So: this broker leads at the epoch before's leader
    # epoch, with this ISR, at `version`; the assignment is the epoch before's
    if prefix.group(7) is None:
        return []
    epoch = int(m.group(2))
    # a leader proposes the state it holds, which becoming leader made RECOVERED (KIP-704: an unclean election's
    # RECOVERING ends with the new leader's first AlterPartition)
    return [Seen(prefix.group(7), int(prefix.group(8)), epoch, leader=int(prefix.group(9)), isr=_ints(m.group(1)),
                 recovery=LeaderRecoveryState.RECOVERED, from_epoch=epoch - 1, leader_update=True, prompt=True)]


def _assigned(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    a = _assignment(m.group(1), int(m.group(2)), m.group(3))
    return [a] if a else []


def _reassigning(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    # the LeaderAndIsr part only: the assignment it is sent with is the controller's target, which reaches
    # /brokers/topics/<t> later (its own "Successfully updated assignment" line)
    lice = _LICE.fullmatch(m.group(1))
    return [_lice(m.group(3), int(m.group(4)), lice)] if lice else []


def _zk_elected(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [ControllerElected(int(m.group(1)), int(m.group(2)))]


def _new_topics(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    out: list[Evidence] = []
    for t in re.finditer(r"TopicIdReplicaAssignment\(([^,()]+),(?:Some\(([\w-]+)\)|None),(?:\w*Map)\((.*?)\)\)\)",
                         m.group(1) + ")"):
        name, tid = t.group(1), t.group(2)
        if tid:
            out.append(TopicCreated(name, tid))
        for a in re.finditer(rf"{_TP} -> ReplicaAssignment\(([^)]*)\)", t.group(3) + ")"):
            got = _assignment(a.group(1), int(a.group(2)), a.group(3), tid)
            if got:
                out.append(got)
    return out


def _zk_topic_deleted(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [TopicDeleted(m.group(1))]


def _brokers_added(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [BrokersAdded(_ints(m.group(1)) + _ints(m.group(2)))]


def _broker_epochs(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    pairs = re.findall(r"(\d+) -> (-?\d+)", m.group(1))
    return [LiveBrokers(tuple(sorted((int(b), int(e)) for b, e in pairs)))]


def _kraft_epoch(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [ControllerElected(int(m.group(2)), int(m.group(1)))]


def _elr_enabled(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [ElrEnabled()]


def _kraft_topic(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [TopicCreated(m.group(1), m.group(2))]


def _kraft_topic_removed(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [TopicDeleted(m.group(1), m.group(2))]


def _kraft_partition(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    seen = _registration(m.group(1), int(m.group(2)), m.group(4), m.group(3))
    return [seen] if seen else []


def _kraft_unclean(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    seen = _unclean(m.group(1), int(m.group(2)), m.group(4), m.group(3))
    return [seen] if seen else []


def _kraft_assignment(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    """``PartitionChangeRecord(partitionId=0, topicId=.., isr=null, leader=-2, replicas=[..], removingReplicas=[..],
    addingReplicas=[..], ...) for topic t. (isr: [1, 3] -> [1, 3], replicaSet: [1, 3] -> [2, 3, 1],
    partitionEpoch: 1, leaderEpoch: 0)``: the epochs after the change; leader -2 and null lists: unchanged."""
    f, after = _fields(m.group(1)), m.group(3)
    got = {k: v for k, v in re.findall(r"(\w+): (?:\[[^\]]*\] -> )?(\[[^\]]*\]|-?\d+)", after)}
    try:
        epoch, partition = int(got["partitionEpoch"]), int(f["partitionId"])
    except (KeyError, ValueError):
        return []
    adding, removing = (_ints(f[key]) if f.get(key, "null") != "null" else None
                        for key in ("addingReplicas", "removingReplicas"))
    leader = int(f.get("leader", "-2"))
    return [AssignmentReplayed(m.group(2), partition),
            Seen(m.group(2), partition, epoch, topic_id=f.get("topicId"), from_epoch=epoch - 1,
                 leader_epoch=int(got["leaderEpoch"]) if "leaderEpoch" in got else None,
                 isr=_ints(got["isr"]) if "isr" in got else None,
                 replicas=_ints(got["replicaSet"]) if "replicaSet" in got else None, adding=adding, removing=removing,
                 leader=leader if leader != -2 else None)]


def _kraft_assignment_unnumbered(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    f = _fields(m.group(1))
    if "partitionId" not in f:
        return []
    new = [_ints(f[k]) if f.get(k, "null") != "null" else None for k in ("replicas", "addingReplicas",
                                                                         "removingReplicas")]
    return [AssignmentReplayed(m.group(2), int(f["partitionId"]), False, *new)]


def _reassignments(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [ReassignmentsAltered(int(m.group(1)))]


def _config(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [ConfigStated(m.group(1), m.group(2), m.group(3), None if m.group(4) == "null" else m.group(4))]


def _replica_created(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [ReplicaCreated(m.group(1), int(m.group(2)))] if _broker_id(prefix) is not None else []


def _leader(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    broker = _broker_id(prefix)
    if broker is None:
        return []
    isr = _ints(m.group(7))
    # Partition.makeLeader prints `isr.toSet`: Scala keeps the order of a set of up to four, not of a larger one
    return [Seen(m.group(1), int(m.group(2)), int(m.group(6)), topic_id=m.group(3) or m.group(4), leader=broker,
                 leader_epoch=int(m.group(5)), isr=isr, adding=_ints(m.group(8)), removing=_ints(m.group(9)),
                 isr_as_set=len(isr) > 4, prompt=_lived(m, int(m.group(5))))]


_PREVIOUS_LEADER = re.compile(r"Previous leader Some\(-?\d+\) and previous leader epoch was (-?\d+)\.")


def _lived(m: re.Match[str], leader_epoch: int) -> bool:
    """A "Leader/Follower ... starts at" line of a partition its broker held at an older leader epoch (``Previous
    leader Some(2) and previous leader epoch was 3``), not one it just created (``Previous leader None``: a new
    replica, or the broker starting). A 3.x follower prints the new leader and epoch there: held before unless the
    broker just said it created the replica (``ReplicaCreated``, which the normalizer keeps)."""
    prev = _PREVIOUS_LEADER.search(m.string, m.end())
    return prev is not None and 0 <= int(prev.group(1)) <= leader_epoch


def _follower(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    return [Seen(m.group(1), int(m.group(2)), int(m.group(4)), leader=int(m.group(5)), leader_epoch=int(m.group(3)),
                 prompt=_lived(m, int(m.group(3))))]


def _skipped(m: re.Match[str], prefix: re.Match[str]) -> list[Evidence]:
    seen = _registration(m.group(1), int(m.group(2)), m.group(5), m.group(3) or m.group(4))
    # "since it is already the leader/a follower": the broker held the partition; "since the leader is already at a
    # newer partition epoch": an old state
    lived = m.string.startswith(" it is already", m.end())
    return [replace(seen, prompt=lived)] if seen else []


# a line's message (its prefix cut off) and its prefix -> what it says
Reader = Callable[[re.Match[str], re.Match[str]], list[Evidence]]
_PATTERNS: list[tuple[re.Pattern[str], Reader]] = [(re.compile(p), reader) for p, reader in (
    (rf"Changed partition {_TP} state from \w+ to NewPartition with assigned replicas ([\d,]*)$", _new),
    (rf"Changed partition {_TP} from \w+ to OnlinePartition with state LeaderAndIsr\((.*)\)$", _online),
    (rf"Partition {_TP} state changed to (\(.*?\)) after removing replica", _offline_replica),
    (rf"ISR for partition {_TP} updated to LeaderAndIsr\((.*)\)\.?$", _online),
    (rf"ISR for partition {_TP} updated to \[([\d,]*)\] and zkVersion updated to \[(\d+)\]$", _isr_altered),
    (rf"Updated leader epoch for partition {_TP} to (\d+), zkVersion=(\d+)", _leader_epoch),
    (r"^ISR updated to ([\d,]+) (?:\(under-min-isr\) | )?and version updated to \[?(\d+)\]?$", _leader_isr),
    (rf"Successfully updated assignment of partition {_TP} to ReplicaAssignment\(([^)]*)\)", _assigned),
    (rf"Sent LeaderAndIsr request (\(.*?\)) with new replica assignment ReplicaAssignment\(([^)]*)\) to leader "
     rf"-?\d+ for partition being reassigned {_TP}$", _reassigning),
    (r"(\d+) successfully elected as the controller\. Epoch incremented to (\d+)", _zk_elected),
    (r"New topics: \[.*?\], deleted topics: \[.*?\], new partition replica assignment \[(.*)\]$", _new_topics),
    (r"Deletion of topic (\S+) successfully completed", _zk_topic_deleted),
    (r"(?:Initialized|Updated) broker epochs cache: \w*Map\((.*)\)$", _broker_epochs),
    (r"^Newly added brokers: ([\d,]*), deleted brokers: [\d,]*, bounced brokers: ([\d,]*), all live brokers",
     _brokers_added),
    (r"In the new epoch (\d+), the leader is (\d+)\.", _kraft_epoch),
    (r"Replayed a FeatureLevelRecord setting feature eligible\.leader\.replicas\.version to ([1-9]\d*)", _elr_enabled),
    (r"Replayed TopicRecord for topic (\S+) with topic ID ([\w-]+)\.", _kraft_topic),
    (r"Replayed RemoveTopicRecord for topic (\S+) with ID ([\w-]+)\.", _kraft_topic_removed),
    (rf"Replayed PartitionRecord for new partition {_TP} with topic ID ([\w-]+) and PartitionRegistration\((.*)\)\.$",
     _kraft_partition),
    (r"Replayed partition assignment change PartitionChangeRecord\((.*?)\) for topic (\S+?)\. \((.*)\)$",
     _kraft_assignment),
    (r"Replayed partition assignment change PartitionChangeRecord\((.*?)\) for topic (\S+)$",
     _kraft_assignment_unnumbered),
    (rf"UNCLEAN partition change for {_TP} with topic ID ([\w-]+): (.*)$", _kraft_unclean),
    (r"^Successfully altered (\d+) out of \d+ partition reassignment\(s\)\.$", _reassignments),
    (r"^Replayed ConfigRecord for ConfigResource\(type=(\w+), name='([^']*)'\) which set configuration (\S+) to "
     r"(.*)$", _config),
    (rf"^Creating new partition {_TP} with topic id [\w-]+\.$", _replica_created),
    (rf"^Expected partition {_TP} with topic id [\w-]+ to exist, but it was missing\. Creating\.\.\.$",
     _replica_created),
    (rf"Leader {_TP} with topic id {_TOPIC_ID} starts at leader epoch (\d+) from offset -?\d+ with partition epoch "
     rf"(\d+), high watermark -?\d+, ISR \[([\d,]*)\], adding replicas \[([\d,]*)\] and removing replicas "
     rf"\[([\d,]*)\]", _leader),
    (rf"Follower {_TP} starts at leader epoch (\d+) from offset -?\d+ with partition epoch (\d+) and high "
     rf"watermark -?\d+\. Current leader is (-?\d+)\.", _follower),
    (rf"Skipped the become-(?:leader|follower) state change for {_TP} with topic id {_TOPIC_ID},? (?:and )?"
     rf"(?:partition state LeaderAndIsrPartitionState|partition registration PartitionRegistration)\((.*?)\)"
     rf"(?: and isNew=\w+)? since", _skipped),
)]
