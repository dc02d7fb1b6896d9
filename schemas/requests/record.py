"""What one line of a broker's or controller's authorizer or request log says about a request: the typed record.

A value the line does not hold is None (or empty), never filled in: an authorizer line names no listener or client
id, a request log line no host but its connection's remote end, and no outcome but its response's error codes.
Secrets never get here: config values pass the archive's redaction rules (services/normalize/redaction.py) and
of a SCRAM credential only its length is kept (body.py).
"""
from __future__ import annotations

from dataclasses import dataclass

# the two logs, as the line's logger (%c) names them
AUTHORIZER_LOGGER = "kafka.authorizer.logger"
REQUEST_LOGGER = "kafka.request.logger"


@dataclass(frozen=True, slots=True)
class Resource:
    """An ACL resource as the authorizer names it: Kafka's Pascal-case type (Topic, Group, Cluster,
    TransactionalId, DelegationToken, User), its pattern type (LITERAL, PREFIXED) and its name."""
    type: str
    pattern: str
    name: str


@dataclass(frozen=True, slots=True)
class Target:
    """A partition's replicas as a request asks for them. `partition` None: a partition CreatePartitions adds,
    whose index the request does not say (the n-th new one, in order); `replicas` None: a reassignment
    cancelled (AlterPartitionReassignments' null replicas)."""
    topic: str
    partition: int | None
    replicas: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class ConfigSet:
    """One config a request sets or removes. `resource_type` is Kafka's ConfigResource.Type id (2 topic, 4 broker,
    8 broker logger, 16 client metrics, 32 group); `operation` IncrementalAlterConfigs' (SET, DELETE, APPEND,
    SUBTRACT), None for AlterConfigs and CreateTopics (which replace); `value` as redacted."""
    resource_type: int
    resource: str
    name: str
    operation: str | None
    value: str | None
    redacted: bool


@dataclass(frozen=True, slots=True)
class AclChange:
    """An ACL CreateAcls creates or a filter DeleteAcls deletes by; Kafka's enum ids as the request has them."""
    action: str  # "create" | "delete"
    resource_type: int
    resource_name: str | None
    pattern_type: int | None  # None: version 0, LITERAL by the protocol
    principal: str | None
    host: str | None
    operation: int
    permission: int


@dataclass(frozen=True, slots=True)
class ScramChange:
    """A SCRAM credential AlterUserScramCredentials sets (upsert) or deletes: never its salt nor its salted
    password, only the salted password's length in bytes."""
    action: str  # "upsert" | "delete"
    user: str
    mechanism: int
    iterations: int | None
    salted_password_bytes: int | None


@dataclass(frozen=True, slots=True)
class QuotaChange:
    entity: tuple[tuple[str, str | None], ...]  # (entity type, name; None: the default entity)
    key: str
    value: float | None
    remove: bool


@dataclass(frozen=True, slots=True)
class FeatureChange:
    feature: str
    max_version_level: int
    upgrade_type: int | None  # 1 upgrade, 2 safe downgrade, 3 unsafe downgrade (version 1+)
    allow_downgrade: bool | None  # version 0


@dataclass(frozen=True, slots=True)
class Body:
    """The fields of a request's body that change controller state, by API (body.py)."""
    topics: tuple[str, ...] = ()  # the topics it names (created, deleted, grown, reassigned, elected)
    topic_ids: tuple[str, ...] = ()  # DeleteTopics by id (version 6+)
    counts: tuple[tuple[str, int], ...] = ()  # a topic's partition count asked for (-1: the broker's default)
    replication_factors: tuple[tuple[str, int], ...] = ()
    targets: tuple[Target, ...] = ()
    configs: tuple[ConfigSet, ...] = ()
    election_type: str | None = None  # ElectLeaders: PREFERRED | UNCLEAN
    elect_all: bool = False  # ElectLeaders with null topicPartitions: every partition
    acls: tuple[AclChange, ...] = ()
    scram: tuple[ScramChange, ...] = ()
    quotas: tuple[QuotaChange, ...] = ()
    features: tuple[FeatureChange, ...] = ()
    nodes: tuple[int, ...] = ()  # UnregisterBroker's broker, Add/RemoveRaftVoter's voter
    validate_only: bool | None = None
    withheld_bytes: int | None = None  # an Envelope's forwarded request: its length, never its bytes


@dataclass(frozen=True, slots=True)
class RequestLine:
    """One authorizer decision or one completed request, as its line states it."""
    log: str  # AUTHORIZER_LOGGER | REQUEST_LOGGER
    form: str  # the line's form (authorizer.FORMS, requestlog.FORM): which Kafka releases write it
    file: str
    line: int
    time_ms: int  # the node's clock, in the zone the reader was given
    level: str
    principal: str
    api: str | None  # Kafka's API name (CreateTopics); None: the line names none (2.8's SimpleAclAuthorizer)
    api_key: int | None
    api_version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    host: str | None = None  # the client's address (the authorizer's; the request log's connection's remote end)
    listener: str | None = None
    security_protocol: str | None = None
    software_name: str | None = None
    software_version: str | None = None
    connection: str | None = None
    forwarded: bool | None = None  # the controller's line of a request a broker forwarded in an Envelope
    outcome: str | None = None  # "allowed" | "denied": the authorizer's decision
    operation: str | None = None  # the ACL operation decided, as AclOperation's name (ALTER, CREATE, ...)
    resources: tuple[Resource, ...] = ()
    rule: str | None = None  # StandardAuthorizer's rule (SuperUser, DefaultAllow, MatchingAcl(...))
    ref_count: int | None = None
    error_codes: tuple[int, ...] = ()  # the response's non-zero error codes, in order of first appearance
    body: Body | None = None
