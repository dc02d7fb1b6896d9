"""Capture settings: topic names, Kafka, directories and rates, each with an env-var fallback.

The docker-compose file and the CLI use exactly these variable names (tests/test_compose.py checks).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, TypeVar

from services.capture import connect
from services.capture.security import ClientSecurity, SettingsError, load
from services.normalize.redaction import compile_patterns

if TYPE_CHECKING:
    from schemas.archive.note import Signer

ENV_PREFIX = "CTRLAUDIT_"


def _env(name: str, default: str) -> str:
    return os.environ.get(ENV_PREFIX + name, default)


N = TypeVar("N", int, float)


def _number(name: str, default: str, kind: Callable[[str], N], what: str) -> N:
    raw = _env(name, default)
    try:
        value = kind(raw.strip())
    except ValueError:
        raise SettingsError(f"{ENV_PREFIX}{name}={raw!r}: expected {what}") from None
    if value != value or value in (float("inf"), float("-inf")):  # nan, inf: time.sleep() refuses them
        raise SettingsError(f"{ENV_PREFIX}{name}={raw!r}: expected {what} (a finite one)")
    return value


def _int(name: str, default: str) -> int:
    return _number(name, default, int, "a whole number")


def _float(name: str, default: str) -> float:
    return _number(name, default, float, "a number of seconds")


# (field, lowest allowed value, what it is) -- checked for env values and CLI values alike
_LIMITS = (
    ("node_id", -1, "a node id, or -1"), ("poll_interval", 0.001, "seconds > 0"),
    ("sample_interval", 0.001, "seconds > 0"), ("archive_flush_seconds", 0.001, "seconds > 0"),
    ("archive_rejoin_seconds", 0.001, "seconds > 0"),
    ("replication_factor", 1, "a replication factor >= 1"), ("web_port", 0, "a port number"),
    ("checkpoint_seconds", 0, "seconds >= 0 (0: no checkpoints)"),
    ("sign_every_events", 1, "a number of events >= 1"), ("sign_every_seconds", 0.001, "seconds > 0"),
)


@dataclass(frozen=True)
class Settings:
    bootstrap_servers: str = field(default_factory=lambda: _env("BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    raw_topic: str = field(default_factory=lambda: _env("RAW_TOPIC", "ctrlaudit.raw"))
    events_topic: str = field(default_factory=lambda: _env("EVENTS_TOPIC", "ctrlaudit.events"))
    alerts_topic: str = field(default_factory=lambda: _env("ALERTS_TOPIC", "ctrlaudit.alerts"))
    dead_letter_topic: str = field(default_factory=lambda: _env("DEAD_LETTER_TOPIC", "ctrlaudit.dead-letter"))
    app_id: str = field(default_factory=lambda: _env("APP_ID", "ctrlaudit-capture"))
    metadata_dir: str = field(default_factory=lambda: _env("METADATA_DIR", ""))
    zookeeper: str = field(default_factory=lambda: _env("ZOOKEEPER", ""))  # HOST:PORT[/chroot] of a ZooKeeper-mode cluster
    cluster_id: str = field(default_factory=lambda: _env("CLUSTER_ID", ""))
    # nodes' log directories whose kafka-request.log and kafka-authorizer.log are followed (services/requests/
    # follow.py), comma-separated: DIR (its node id as the server.log there states it, else NODE_ID) or DIR=ID
    request_log_dirs: str = field(default_factory=lambda: _env("REQUEST_LOG_DIRS", ""))
    node_id: int = field(default_factory=lambda: _int("NODE_ID", "-1"))
    poll_interval: float = field(default_factory=lambda: _float("POLL_INTERVAL", "0.05"))
    commit_gate: str = field(default_factory=lambda: _env("COMMIT_GATE", "quorum"))  # quorum | none
    sample_interval: float = field(default_factory=lambda: _float("SAMPLE_INTERVAL", "10"))
    archive_dir: str = field(default_factory=lambda: _env("ARCHIVE_DIR", "archive"))
    archive_group: str = field(default_factory=lambda: _env("ARCHIVE_GROUP", "ctrlaudit-archiver"))
    archive_flush_seconds: float = field(default_factory=lambda: _float("ARCHIVE_FLUSH_SECONDS", "60"))
    # how long the archiver waits without partitions, while nobody commits the topic's events, before it
    # rejoins its group with a new consumer (services/capture/stall.py)
    archive_rejoin_seconds: float = field(default_factory=lambda: _float("ARCHIVE_REJOIN_SECONDS", "60"))
    data_dir: str = field(default_factory=lambda: _env("DATA_DIR", "ctrlaudit-data"))
    replication_factor: int = field(default_factory=lambda: _int("REPLICATION_FACTOR", "3"))
    web_port: int = field(default_factory=lambda: _int("WEB_PORT", "6066"))
    # seconds between normalizer image checkpoints (services/capture/image_store.py); 0: none, a restart
    # replays the whole raw topic
    # which agents this worker runs: "normalize,watch" (one process), or "normalize" and "watch" in two
    # workers so that live checks take their own core and never slow the capture (ctrlaudit capture does)
    roles: str = field(default_factory=lambda: _env("ROLES", "normalize,watch"))
    checkpoint_seconds: float = field(default_factory=lambda: _float("CHECKPOINT_SECONDS", "60"))
    # a Kafka client properties file (security.protocol, sasl.*, ssl.*), as `--command-config` of Kafka's
    # tools: every client of the capture side reads it (services/capture/security.py)
    command_config: str = field(default_factory=lambda: _env("COMMAND_CONFIG", ""))
    # configs whose values are redacted besides Kafka's PASSWORD ones and the fallback suffixes: globs or
    # re:<regex>, comma-separated (services/normalize/redaction.py)
    redact_patterns: str = field(default_factory=lambda: _env("REDACT_PATTERNS", ""))
    # a signing key file (ctrlaudit keygen): the worker signs checkpoints of its events' Merkle tree and publishes
    # them to the checkpoints topic (services/capture/signing.py); the archiver signs its own at every file
    signing_key: str = field(default_factory=lambda: _env("SIGNING_KEY", ""))
    checkpoints_topic: str = field(default_factory=lambda: _env("CHECKPOINTS_TOPIC", "ctrlaudit.checkpoints"))
    # a signed checkpoint at least every this many delivered events, or this many seconds when there are new ones
    sign_every_events: int = field(default_factory=lambda: _int("SIGN_EVERY_EVENTS", "10000"))
    sign_every_seconds: float = field(default_factory=lambda: _float("SIGN_EVERY_SECONDS", "60"))

    def __post_init__(self) -> None:
        for name, low, what in _LIMITS:
            value = getattr(self, name)
            if not value >= low or (name == "web_port" and value > 65535):  # `not >=`: NaN from a CLI value too
                raise SettingsError(f"{ENV_PREFIX}{name.upper()}={value!r}: expected {what}")
        if self.commit_gate not in ("quorum", "none"):
            raise SettingsError(f"{ENV_PREFIX}COMMIT_GATE={self.commit_gate!r}: expected quorum or none")
        if not self.bootstrap_servers.strip():
            raise SettingsError(f"{ENV_PREFIX}BOOTSTRAP_SERVERS={self.bootstrap_servers!r} is empty: expected HOST:PORT[,HOST:PORT...]")
        self.role_set  # noqa: B018 - validates CTRLAUDIT_ROLES
        self.request_logs  # noqa: B018 - validates CTRLAUDIT_REQUEST_LOG_DIRS
        if self.redact_patterns:
            compile_patterns(self.redact_patterns)

    @property
    def role_set(self) -> frozenset[str]:
        roles = frozenset(r.strip() for r in self.roles.split(",") if r.strip())
        unknown = roles - {"normalize", "watch"}
        if unknown or not roles:
            raise SettingsError(f"CTRLAUDIT_ROLES={self.roles!r}: expected normalize, watch or both")
        return roles

    @property
    def request_logs(self) -> list[tuple[str, int | None]]:
        """REQUEST_LOG_DIRS as (directory, node id given or None), in order."""
        out: list[tuple[str, int | None]] = []
        for item in (i.strip() for i in self.request_log_dirs.split(",")):
            if not item:
                continue
            where, eq, n = item.rpartition("=")
            if not eq:
                out.append((item, None))
            elif where and n.strip().isdigit():
                out.append((where.strip(), int(n)))
            else:
                raise SettingsError(f"CTRLAUDIT_REQUEST_LOG_DIRS={self.request_log_dirs!r}: {item!r} is not DIR or "
                                    "DIR=ID (a node id >= 0)")
        return out

    @property
    def security(self) -> ClientSecurity:
        """The ClientSecurity of `command_config` (PLAINTEXT without one); SecurityConfigError when unusable."""
        return load(self.command_config)

    @property
    def signers(self) -> list[Signer]:
        """The signing key of `signing_key` (none: unsigned); SigningError, one line, when it cannot be used."""
        if not self.signing_key:
            return []
        # every capture process reads these settings, and only one given a key signs: the signed archive's
        # modules and cryptography would cost every worker's start CPU (bench/RESULTS.md)
        # deferred: signing, only with a key
        from schemas.archive.signed import load_signer
        return [load_signer(self.signing_key)]

    @property
    def worker_app_id(self) -> str:
        """A watch-only worker is its own consumer group: in the normalizer's group Faust's assignor could
        hand it the raw topic, which it has no agent for."""
        return self.app_id if "normalize" in self.role_set else f"{self.app_id}-watch"

    def replace(self, **kw: str | float | None) -> Settings:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update({k: v for k, v in kw.items() if v is not None})
        return Settings(**values)

    @staticmethod
    def env_names() -> set[str]:
        return {ENV_PREFIX + f.name.upper() for f in fields(Settings)}


# Topic configs. The events topic is the record of truth: never deleted, never compacted.
EVENTS_TOPIC_CONFIG = {"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"}
# The signed checkpoints are records too (the archiver stores each; a restarting worker resumes its tree from the
# newest): kept like the events. One every 10,000 events or minute at most: small.
CHECKPOINTS_TOPIC_CONFIG = EVENTS_TOPIC_CONFIG
# A restarting worker replays the raw topic from its last image checkpoint, or from its start when the
# checkpoint is missing or refused (image_store.py), so it keeps everything too; its messages are whole
# KRaft batches (up to 8 MiB).
RAW_TOPIC_CONFIG = {"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete",
                    "max.message.bytes": str(16 * 1024 * 1024)}
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# The image checkpoint table's changelog (Faust makes it compacted): segments roll every 10 min or 64 MiB
# so compaction keeps recovery to about the newest checkpoint.
IMAGE_TABLE_CONFIG = {"segment.ms": "600000", "segment.bytes": str(64 * 1024 * 1024),
                      "min.cleanable.dirty.ratio": "0.1"}
# The producer's batch size (bytes): below the brokers' default message.max.bytes (1048588), which the
# events topic keeps, so that a full batch of events is never refused.
EVENTS_BATCH_BYTES = 1_000_000
# The worker's cyclic-GC thresholds. Each event allocates about a dozen short-lived tracked containers
# (tuples, slotted dataclasses), so at the default gen-0 threshold of 700 the collector ran every ~60
# events and took about a quarter of the normalizer's CPU (bench/capture.py --offline: 37.5k -> 48.9k
# events per CPU-second with 7000). Nothing in the worker relies on prompt collection of cycles.
GC_THRESHOLDS = (7000, 10, 10)


def ensure_topics(s: Settings, timeout: float = 60) -> list[str]:
    """Create the capture topics (with their configs) if missing; returns those created. Run before the
    worker starts: Faust subscribes only to topics that exist when it starts. confluent-kafka's admin
    client, so that kafka-python is left with only the requests no other client exposes (docs/how-to/live-capture.md)."""
    from confluent_kafka import KafkaError, KafkaException  # extra: capture
    # NewTopic's documented home; the package imports it from confluent_kafka.cimpl without exporting it
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # extra: capture

    wanted = {s.raw_topic: RAW_TOPIC_CONFIG, s.events_topic: EVENTS_TOPIC_CONFIG, s.alerts_topic: {},
              s.dead_letter_topic: EVENTS_TOPIC_CONFIG, s.checkpoints_topic: CHECKPOINTS_TOPIC_CONFIG}
    conf, access = connect.config(s.bootstrap_servers, s.security, extra={"client.id": "ctrlaudit-setup"})
    admin = AdminClient(conf)  # type: ignore[arg-type]  # its stub leaves out the callbacks (error_cb, logger)
    deadline = time.monotonic() + timeout
    while True:  # a broker may still be starting
        try:
            existing = set(admin.list_topics(timeout=10).topics)
            break
        except KafkaException:
            admin.poll(0)
            access.check()  # refused credentials: AccessDenied, one line (services/capture/__main__.py)
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    todo = [NewTopic(t, 1, s.replication_factor, config=dict(c)) for t, c in wanted.items() if t not in existing]
    if todo:
        for _topic, future in admin.create_topics(todo, request_timeout=30).items():
            try:
                future.result()
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
    return [t.topic for t in todo]
