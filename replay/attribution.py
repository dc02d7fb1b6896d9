"""Who asked for each controller change: the client request that caused it, or the controller's own doing, or
said plainly that the logs do not tell. Never a guess.

A change and its request share no id. The metadata log records what changed and when; the brokers' request and
authorizer logs record who asked (services/requests/reader.py). A change is matched to the requests that could
have caused it: their API is one that makes that change (`wanted`), they name its resource (the topic, partition,
broker, config or feature), and their lines fall in a window around it: from `window_ms` before it (the request
was received, authorized and forwarded before the change was written) to `after_ms` after it (a request log line
is written when the response is sent, after the change is committed). The nodes' clocks may disagree (clocks.py
names the disagreements it can see), so `skew_ms` widens the window on both sides. The answer states the window
it used.

What the answer can be (`Attribution.cause`):
- `request`: one request matched (in KRaft a forwarded request is on two nodes' logs, the broker's and the
  controller's: one request, both lines kept, the broker's first, as it has the client's listener and software);
- `ambiguous`: several requests matched and nothing in the logs tells them apart; all are named;
- `controller`: a change the controller makes on its own (an ISR change a leader asked for, an election after a
  broker failure, a reassignment completing, a broker registering), with no request that could have made it;
- `unattributed`: a change only a request makes, with no request in the logs within the window (logs not kept,
  the loggers not at DEBUG, a ZooKeeper-mode tool that wrote the znode itself); the reason says which;
- `bootstrap`: the state a log or snapshot starts with, not a change anyone asked for then.

Denied requests change nothing; `denied` lists them, as an auditor wants to see an attempt too.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from schemas import times
from schemas.events import (
    REDACTED, BrokerChange, BrokerChangeKind, ConfigChange, ControllerEvent, ElectionType, FeatureLevelChange,
    PartitionChange, PartitionChangeKind, TopicChange, TopicChangeKind,
)
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER, RequestLine

REQUEST, AMBIGUOUS, CONTROLLER, UNATTRIBUTED, BOOTSTRAP = "request", "ambiguous", "controller", "unattributed", "bootstrap"
WINDOW_MS = 60_000  # a request's changes are written within milliseconds; a minute leaves room for a slow controller
AFTER_MS = 5_000  # a request log line follows the commit by the response's way back (milliseconds; a forwarded one's
# broker line by the controller's answer too)

# Kafka's ConfigResource.Type ids (as a request's body holds them) by the archive's ConfigResourceType names
CONFIG_TYPE_IDS = {"TOPIC": 2, "BROKER": 4, "BROKER_LOGGER": 8, "CLIENT_METRICS": 16, "GROUP": 32}
K = PartitionChangeKind
_K_ALONE = {K.ISR, K.ELR, K.LEADER_EPOCH, K.RECOVERY_STATE}  # what a leader's AlterPartition or the controller changes


@dataclass(frozen=True, slots=True)
class Subject:
    """What attribution reads of a change: its place and its payload's fields, as the flat table's columns name
    them (schemas/archive/flat.py), so a change is judged alike from an archive's event (`subject_of`) and from a
    store's row (`subject_of_row`)."""
    seq: int
    event_time_ms: int
    kind: str  # the payload's type: PartitionChange, TopicChange, ...
    bootstrap: bool = False
    topic: str | None = None
    partition: int | None = None
    topic_change: str | None = None
    changes: frozenset[str] = frozenset()
    election: str | None = None
    config_type: str | None = None
    config_resource: str | None = None
    config_name: str | None = None
    config_value: str | None = None
    config_redacted: bool = False
    broker_id: int | None = None
    broker_change: str | None = None
    feature: str | None = None
    feature_level: int | None = None
    feature_prev_level: int | None = None


# the payload kinds that are not changes: nothing to attribute
NOT_CHANGES = frozenset({"OffsetSample", "CaptureGap", "UnknownRecord", "ClientRequest"})
# the columns `subject_of_row` reads, in its order
SUBJECT_COLUMNS = ("seq", "event_time_ms", "kind", "bootstrap", "topic", '"partition"', "topic_change", "changes",
                   "election", "config_type", "config_resource", "config_name", "config_value", "broker_id",
                   "broker_change", "feature", "feature_level", "feature_prev_level")


def subject_of(e: ControllerEvent) -> Subject:
    p = e.payload
    base = Subject(e.seq, e.event_time_ms, type(p).__name__, e.bootstrap)
    if isinstance(p, TopicChange):
        return replace(base, topic=p.topic, topic_change=p.kind.value)
    if isinstance(p, PartitionChange):
        return replace(base, topic=p.topic, partition=p.partition, changes=frozenset(c.value for c in p.changes),
                       election=p.election.value)
    if isinstance(p, ConfigChange):
        return replace(base, config_type=p.resource_type.value, config_resource=p.resource_name, config_name=p.name,
                       config_value=p.value, config_redacted=p.redacted)
    if isinstance(p, BrokerChange):
        return replace(base, broker_id=p.broker_id, broker_change=p.kind.value)
    if isinstance(p, FeatureLevelChange):
        return replace(base, feature=p.feature, feature_level=p.level, feature_prev_level=p.previous_level)
    return base


def subject_of_row(r: Sequence[Any]) -> Subject:
    """A change from a store row of SUBJECT_COLUMNS (a redacted value is the archive's "[redacted]")."""
    (seq, at, kind, bootstrap, topic, partition, topic_change, changes, election, config_type, config_resource,
     config_name, config_value, broker_id, broker_change, feature, level, prev_level) = r
    return Subject(seq, at, kind, bool(bootstrap), topic, partition, topic_change, frozenset(changes or ()), election,
                   config_type, config_resource, config_name, config_value, config_value == REDACTED, broker_id,
                   broker_change, feature, level, prev_level)


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a request that caused a change would be: one of `apis`, naming resource `kind` `name` (and the
    `partition`, where the request names partitions). `controller`: why the controller may have made the change
    on its own (None: only a request makes it)."""
    apis: tuple[str, ...]
    kind: str  # "topic" | "broker" | "config" | "feature"
    name: str
    partition: int | None = None
    config_type: int | None = None  # a config change's resource type id
    config: tuple[str, str | None] | None = None  # a config change's name and value (None: removed or redacted)
    controller: str | None = None


@dataclass(frozen=True, slots=True)
class Attribution:
    seq: int
    event_time_ms: int
    cause: str
    why: str
    requests: tuple[tuple[RequestLine, ...], ...] = ()  # each request's lines: the broker's, then the controller's
    decisions: tuple[RequestLine, ...] = ()  # the authorizer's lines that allowed them


def wanted(s: Subject) -> Wanted | None:
    """The request that would have caused change `s`; None when `s` is not a change anyone asks for (a sample, a
    gap, a record the decoder does not know) or is one only the controller makes."""
    if s.kind == "TopicChange":
        api = "CreateTopics" if s.topic_change == TopicChangeKind.CREATED else "DeleteTopics"
        return Wanted((api,), "topic", s.topic or "")
    if s.kind == "PartitionChange":
        return _partition(s)
    if s.kind == "ConfigChange":
        apis = ("AlterConfigs", "IncrementalAlterConfigs") + (("CreateTopics",) if s.config_type == "TOPIC" else ())
        return Wanted(apis, "config", s.config_resource or "", config_type=CONFIG_TYPE_IDS.get(s.config_type or "", -1),
                      config=(s.config_name or "", None if s.config_redacted else s.config_value))
    if s.kind == "BrokerChange":
        if s.broker_change == BrokerChangeKind.UNREGISTERED:
            return Wanted(("UnregisterBroker",), "broker", str(s.broker_id),
                          controller="a broker's registration ends when it shuts down or its session expires")
        return None
    if s.kind == "FeatureLevelChange" and s.feature_prev_level is not None:
        return Wanted(("UpdateFeatures",), "feature", s.feature or "")
    return None


def _partition(s: Subject) -> Wanted | None:
    changes, topic = s.changes, s.topic or ""
    if K.CREATE in changes:  # which of the two, by the partition counts the requests ask for (`_created_by`)
        return Wanted(("CreateTopics", "CreatePartitions"), "topic", topic, s.partition)
    if K.DELETE in changes:
        return Wanted(("DeleteTopics",), "topic", topic, s.partition)
    if changes & {K.REASSIGNMENT_START, K.REASSIGNMENT_CANCEL}:
        return Wanted(("AlterPartitionReassignments",), "topic", topic, s.partition)
    if K.LEADER in changes and s.election == ElectionType.PREFERRED:
        return Wanted(("ElectLeaders",), "topic", topic, s.partition,
                      controller="the controller's automatic preferred-leader rebalance")
    if K.LEADER in changes and s.election == ElectionType.UNCLEAN:
        return Wanted(("ElectLeaders",), "topic", topic, s.partition,
                      controller="an unclean election the controller made (unclean.leader.election.enable)")
    return None


def controller_reason(s: Subject) -> str:
    """Why the controller made change `s` on its own (one `wanted` gives no request for)."""
    if s.kind == "ControllerChange":
        return "a controller election"
    if s.kind == "FeatureLevelChange":
        return f"{s.feature} {s.feature_level}: the level the cluster was formatted with, written at its first start"
    if s.kind == "BrokerChange":
        return (f"broker {s.broker_id} {(s.broker_change or 'changed').lower().replace('_', ' ')}: the broker's own "
                "lifecycle")
    if s.kind == "PartitionChange":
        if K.REASSIGNMENT_COMPLETE in s.changes:
            return "a reassignment completing once its new replicas caught up"
        election = s.election or "NONE"
        if K.LEADER in s.changes and election in ("NONE", "UNKNOWN"):
            return ("a leader change the controller made, no election (a leader going offline, or its topic being "
                    "deleted)")
        if K.LEADER in s.changes:
            return f"a {election.lower().replace('_', ' ')} election the controller made"
        if s.changes <= _K_ALONE:
            return "an ISR/ELR change a partition leader asked for (AlterPartition) or the controller made"
    return "a change the controller makes on its own"


# the APIs Kafka authorizes on the cluster, not on the topic they name: their authorizer line names no topic
CLUSTER_APIS = frozenset({"ElectLeaders", "AlterPartitionReassignments", "UnregisterBroker", "UpdateFeatures"})


def _on_topic(line: RequestLine, w: Wanted) -> bool:
    """Whether the authorizer decides `line`'s API on the topic it names (CreateTopics may be decided on the
    cluster instead: CREATE on the cluster allows any topic)."""
    return line.api not in CLUSTER_APIS and (w.kind == "topic" or (w.kind == "config" and w.config_type == 2))


def _names(line: RequestLine, w: Wanted) -> bool:
    """Whether `line` names `w`'s resource (its body, or the authorizer's resources)."""
    if line.log == AUTHORIZER_LOGGER:
        on_topic = _on_topic(line, w)
        return any(r.name == w.name if on_topic and r.type == "Topic" else r.type == "Cluster" for r in line.resources)
    b = line.body
    if b is None:
        return False
    if w.kind == "topic":
        if line.api == "AlterPartitionReassignments" or (line.api == "ElectLeaders" and not b.elect_all):
            return any(t.topic == w.name and t.partition in (None, w.partition) for t in b.targets) or (
                not b.targets and w.name in b.topics)
        return w.name in b.topics or b.elect_all
    if w.kind == "config":
        assert w.config is not None  # wanted() gives every config change its name and value
        name, value = w.config
        # the value as well as the name: a topic created with a config and altered a moment later is two requests;
        # a redacted value, or one APPEND/SUBTRACT changed, is matched by name
        return any(c.resource == w.name and c.resource_type == w.config_type and c.name == name and (
            c.redacted or value is None or c.value == value or c.operation in ("APPEND", "SUBTRACT"))
            for c in b.configs)
    if w.kind == "broker":
        return w.name in {str(n) for n in b.nodes}
    return any(f.feature == w.name for f in b.features)


def _count(line: RequestLine, topic: str) -> int | None:
    """The partition count `line` asks `topic` to have (None: unknown, or the broker's default)."""
    n = dict(line.body.counts).get(topic) if line.body is not None else None
    return None if n is None or n < 0 else n


def _created_by(requests: list[tuple[RequestLine, ...]], w: Wanted) -> list[tuple[RequestLine, ...]]:
    """Of the requests that could have created partition `w.partition`, the ones that did: a CreateTopics of N
    partitions made partitions 0..N-1, so a CreatePartitions (which adds partitions after the existing ones) did
    not make those; a request whose count is not above the partition made none of it."""
    if w.partition is None or set(w.apis) != {"CreateTopics", "CreatePartitions"}:
        return requests
    p = w.partition
    fits = [g for g in requests if (n := _count(g[0], w.name)) is None or p < n]
    if any(g[0].api == "CreateTopics" and (n := _count(g[0], w.name)) is not None and p < n for g in fits):
        fits = [g for g in fits if g[0].api == "CreateTopics"]
    return fits


def _failed(g: tuple[RequestLine, ...]) -> bool:
    """Whether request `g` answered with an error: the answer its client got (the broker's line); without that line,
    every controller's (a broker retries a forwarded request at another controller after a NOT_CONTROLLER: one of
    them answered, the other's error the client never saw)."""
    client = [x for x in g if not x.forwarded]
    return any(x.error_codes for x in client) if client else all(x.error_codes for x in g)


def _request_key(line: RequestLine) -> tuple[object, ...]:
    # a forwarded request's two lines (clocks.py pairs them the same way): one request
    return (line.principal, line.client_id, line.correlation_id, line.api)


def attribute(events: Sequence[ControllerEvent | Subject], lines: Sequence[RequestLine], window_ms: int = WINDOW_MS,
              skew_ms: int = 0, after_ms: int = AFTER_MS, unread: Sequence[str] = ()) -> list[Attribution]:
    """Each change in `events` attributed (the module's doc says how); `lines` of any nodes, in any order. `unread`:
    the stretches of the logs that were not read (gaps of attribution), said beside each unattributed change, whose
    request may be among them."""
    not_read = (f"; {len(unread)} stretch(es) of the logs not read ({unread[0]}{', ...' if len(unread) > 1 else ''}): "
                "its request may be among them") if unread else ""
    by_api: dict[str, list[RequestLine]] = {}
    for line in lines:
        if line.api is not None and (line.log == REQUEST_LOGGER or line.outcome == "allowed"):
            by_api.setdefault(line.api, []).append(line)
    subjects = [x if isinstance(x, Subject) else subject_of(x) for x in events]
    # the controller's first activation writes the cluster's formatted state (metadata.version's first level and,
    # from 4.0, what comes with it: other features, the cluster's min.insync.replicas) in one batch, one append time
    activation = {s.event_time_ms for s in subjects if s.kind == "FeatureLevelChange"
                  and s.feature == "metadata.version" and s.feature_prev_level is None}
    window = (f"logged from {window_ms + skew_ms} ms before it to {after_ms + skew_ms} ms after (clock skew "
              f"{skew_ms} ms)")
    out = []
    for e in subjects:
        if e.kind in NOT_CHANGES:
            continue
        if e.bootstrap:
            out.append(Attribution(e.seq, e.event_time_ms, BOOTSTRAP, "the state the log or snapshot starts with"))
            continue
        w = wanted(e)
        if w is None:
            out.append(Attribution(e.seq, e.event_time_ms, CONTROLLER, controller_reason(e)))
            continue
        lo, hi = e.event_time_ms - window_ms - skew_ms, e.event_time_ms + after_ms + skew_ms
        near = [x for api in w.apis for x in by_api.get(api, ()) if lo <= x.time_ms <= hi and _names(x, w)]
        decisions = tuple(x for x in near if x.log == AUTHORIZER_LOGGER)
        grouped: dict[tuple[object, ...], list[RequestLine]] = {}
        for x in sorted((x for x in near if x.log == REQUEST_LOGGER), key=lambda x: (bool(x.forwarded), x.time_ms)):
            grouped.setdefault(_request_key(x), []).append(x)
        requests = _created_by(sorted((tuple(g) for g in grouped.values()), key=lambda g: g[0].time_ms), w)
        clean = [g for g in requests if not _failed(g)]
        if len(requests) > 1 and len(clean) == 1:
            requests = clean  # the others answered with an error: they did not make it
        if len(requests) == 1:
            r = requests[0][0]
            out.append(Attribution(e.seq, e.event_time_ms, REQUEST,
                                   f"{r.api} by {r.principal} (client id {r.client_id}), {window}",
                                   tuple(requests), decisions))
        elif requests:
            out.append(Attribution(e.seq, e.event_time_ms, AMBIGUOUS,
                                   f"{len(requests)} {'/'.join(w.apis)} requests naming {w.kind} {w.name}, {window}; "
                                   "the logs do not tell which", tuple(requests), decisions))
        elif decisions:
            who = sorted({d.principal for d in decisions})
            d = decisions[-1]
            named = "" if any(r.type == "Topic" for r in d.resources) else "; it names the cluster, not the topic"
            if len(who) == 1:
                out.append(Attribution(e.seq, e.event_time_ms, REQUEST,
                                       f"{d.api} by {d.principal} from {d.host} (the authorizer's line only, no "
                                       f"request log line{named}), {window}", (), decisions))
            else:
                out.append(Attribution(e.seq, e.event_time_ms, AMBIGUOUS,
                                       f"{'/'.join(w.apis)} allowed for {', '.join(who)} (the authorizer's lines only"
                                       f"{named}), {window}; the logs do not tell which", (), decisions))
        elif w.controller is not None:
            out.append(Attribution(e.seq, e.event_time_ms, CONTROLLER,
                                   f"{w.controller}: no {'/'.join(w.apis)} request naming {w.kind} {w.name}, {window}"))
        elif e.event_time_ms in activation:
            out.append(Attribution(e.seq, e.event_time_ms, CONTROLLER, "written with the cluster's formatted state at "
                                   "the controller's first activation (the batch of metadata.version's first level)"))
        else:
            out.append(Attribution(e.seq, e.event_time_ms, UNATTRIBUTED,
                                   f"no {'/'.join(w.apis)} request naming {w.kind} {w.name} {window} in the logs read "
                                   "(not kept, the loggers not at DEBUG, or a tool that wrote ZooKeeper itself)"
                                   + not_read))
    return out


def software(name: str | None, version: str | None) -> str | None:
    """The client's software as said ("apache-kafka-java 4.3.1"); None when the request did not name it (Kafka
    writes "unknown" for a client older than KIP-511)."""
    return None if name in (None, "unknown") else f"{name} {version or ''}".rstrip()


def requested_by(principal: str, host: str | None, client_id: str | None, software_name: str | None,
                 software_version: str | None, time_ms: int, node: int | None, api: str | None,
                 listener: str | None) -> str:
    """The sentence a person reads: "requested by User:alice from 10.0.3.7 (client id reassign-tool,
    apache-kafka-java 4.3.1) at T, received by node 2: AlterPartitionReassignments on listener SASL_SSL"."""
    named = software(software_name, software_version)
    client = f" (client id {client_id}{', ' + named if named else ''})" if client_id is not None else ""
    received = f", received by node {node}" if node is not None and node >= 0 else ""
    return (f"requested by {principal}{' from ' + host if host else ''}{client} at {times.show(time_ms)}{received}: "
            f"{api}" + (f" on listener {listener}" if listener else ""))


def denied(lines: Iterable[RequestLine]) -> list[RequestLine]:
    """The authorizer's denials, in time order: attempts that changed nothing, evidence all the same."""
    return sorted((x for x in lines if x.log == AUTHORIZER_LOGGER and x.outcome == "denied"), key=lambda x: x.time_ms)
