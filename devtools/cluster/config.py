"""Server and logging configuration of the dev cluster's combined-mode nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

LOG_PATTERN = "[%d] %p %m (%c)%n"


def under_root(*parts: str) -> property:
    """A path property of an object with a `root`: root/parts."""
    return property(lambda self: self.root.joinpath(*parts))


@dataclass(frozen=True)
class NodeLayout:
    """Where node ``node_id`` keeps everything; all paths are under the cluster directory."""

    node_id: int
    root: Path
    plaintext_port: int
    controller_port: int

    properties = under_root("server.properties")
    data_dir = under_root("data")
    metadata_dir = under_root("data", "__cluster_metadata-0")  # the partition directory: segments and snapshots
    logs_dir = under_root("logs")
    stdout = under_root("stdout.log")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.plaintext_port}"

    # the secured listeners (ClusterSettings.secure): two ports after CONTROLLER
    @property
    def sasl_ssl_port(self) -> int:
        return self.plaintext_port + 2

    @property
    def ssl_port(self) -> int:
        return self.plaintext_port + 3


def ports_for(base_port: int, node_id: int) -> tuple[int, int]:
    """Node i listens on base+100*i+2 (PLAINTEXT) and base+100*i+3 (CONTROLLER); with secured listeners
    also on +4 (SASL_SSL) and +5 (SSL with client certificates)."""
    return base_port + 100 * node_id + 2, base_port + 100 * node_id + 3


@dataclass(frozen=True)
class SecureListeners:
    """A SASL_SSL listener (SCRAM-SHA-512 and PLAIN) and an SSL listener that requires a client certificate,
    besides PLAINTEXT (inter-broker, and the tests' own tools) and, in KRaft, CONTROLLER. The SCRAM users are
    added when the storage is formatted (kafka-storage format --add-scram; in ZooKeeper mode written to ZooKeeper
    before the brokers start: devtools/cluster/zkmode.py); the PLAIN users live in the listener's JAAS config.
    No authorizer unless the overrides set one (authorizer.class.name, super.users): then a principal may do
    what its ACLs allow."""

    keystore: Path  # PKCS12, the brokers' key and certificate (devtools/cluster/tls.py)
    truststore: Path  # PKCS12, the CA that signs client certificates
    password: str  # of both stores
    scram_users: dict[str, str] = field(default_factory=dict)
    plain_users: dict[str, str] = field(default_factory=dict)


def _jaas_quote(v: str) -> str:
    if any(c in v for c in '"\\\n'):  # would need JAAS and properties escaping; a dev cluster does without
        raise ValueError("a PLAIN password of the dev cluster may not hold a quote, a backslash or a newline")
    return f'"{v}"'


def secure_properties(sec: SecureListeners, node: "NodeLayout", *, kraft: bool = True) -> dict[str, object]:
    """The secured listeners' properties; `kraft`: a combined node's, with its CONTROLLER listener (a ZooKeeper-mode
    broker has none)."""
    plain = " ".join(f"user_{u}={_jaas_quote(p)}" for u, p in sec.plain_users.items())
    controller = f"CONTROLLER://127.0.0.1:{node.controller_port}," if kraft else ""
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port},{controller}"
                     f"SASL_SSL://127.0.0.1:{node.sasl_ssl_port},SSL://127.0.0.1:{node.ssl_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port},"
                                f"SASL_SSL://127.0.0.1:{node.sasl_ssl_port},SSL://127.0.0.1:{node.ssl_port}",
        "listener.security.protocol.map": ("CONTROLLER:PLAINTEXT," if kraft else "")
                                          + "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain};",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": sec.keystore,
        "ssl.keystore.password": sec.password,
        "ssl.key.password": sec.password,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": sec.truststore,
        "ssl.truststore.password": sec.password,
        "listener.name.ssl.ssl.client.auth": "required",  # mutual TLS on SSL; SASL_SSL authenticates by SASL
    }


def scram_format_args(sec: SecureListeners) -> list[str]:
    """kafka-storage format arguments that create the SCRAM-SHA-512 credentials."""
    return [a for u, p in sec.scram_users.items() for a in ("--add-scram", f"SCRAM-SHA-512=[name={u},password={p}]")]


def scram_zookeeper_args(zookeeper_connect: str, user: str, password: str) -> list[str]:
    """kafka-configs arguments that write a SCRAM-SHA-512 credential to ZooKeeper (ZooKeeper mode: before the
    brokers start, what Kafka's security docs say to do for the inter-broker or first admin user)."""
    return ["--zookeeper", zookeeper_connect, "--alter", "--entity-type", "users", "--entity-name", user,
            "--add-config", f"SCRAM-SHA-512=[password={password}]"]


@dataclass
class ClusterSettings:
    """Knobs of the dev cluster. Defaults favour fast failure detection in tests."""

    version: str
    nodes: int = 3
    base_port: int = 19000
    heap: str = "512m"
    # Small enough that ISR shrink and fencing happen within seconds of a kill -9.
    replica_lag_time_max_ms: int = 3000
    broker_session_timeout_ms: int = 4000
    broker_heartbeat_interval_ms: int = 500
    # None keeps Kafka's default; a small value makes the metadata log roll segments.
    metadata_segment_bytes: int | None = None
    # Internal topics get few partitions so the metadata log stays small and readable.
    internal_topic_partitions: int = 5
    overrides: dict[str, str] = field(default_factory=dict)
    # SASL_SSL and mutual-TLS listeners besides PLAINTEXT (None: PLAINTEXT only)
    secure: SecureListeners | None = None
    # Kafka's request and authorizer loggers at DEBUG into kafka-request.log and kafka-authorizer.log: who asked
    # for each change (`ctrlaudit who`); False leaves them at the root logger's INFO (no request lines)
    request_logs: bool = False

    @property
    def pre_4(self) -> bool:
        """A release before 4.0: ZooKeeper mode, log4j 1.x."""
        return int(self.version.split(".")[0]) < 4


def _broker_basics(s: ClusterSettings, node: NodeLayout) -> dict[str, object]:
    """What a dev-cluster broker needs in either mode: its log dir, no auto-created topics, small
    internal topics, and the ISR timing of the settings."""
    return {
        "log.dirs": node.data_dir,
        "num.partitions": 1,
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": min(3, s.nodes),
        "offsets.topic.num.partitions": s.internal_topic_partitions,
        "transaction.state.log.replication.factor": min(3, s.nodes),
        "transaction.state.log.min.isr": min(2, s.nodes),
        "transaction.state.log.num.partitions": s.internal_topic_partitions,
        "group.initial.rebalance.delay.ms": 0,
        "replica.lag.time.max.ms": s.replica_lag_time_max_ms,
    }


def server_properties(s: ClusterSettings, node: NodeLayout, voters: str) -> str:
    props: dict[str, object] = {
        "process.roles": "broker,controller",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port},"
                     f"CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        **_broker_basics(s, node),
        "broker.session.timeout.ms": s.broker_session_timeout_ms,
        "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        "controller.quorum.election.timeout.ms": 1000,
        "controller.quorum.fetch.timeout.ms": 2000,
    }
    if not s.pre_4:
        props["share.coordinator.state.topic.replication.factor"] = min(3, s.nodes)
        props["share.coordinator.state.topic.min.isr"] = min(2, s.nodes)
    if s.metadata_segment_bytes is not None:
        if s.pre_4:
            # 3.x refuses metadata segments under metadata.log.segment.min.bytes (8 MiB).
            props["metadata.log.segment.min.bytes"] = s.metadata_segment_bytes
            props["metadata.log.segment.bytes"] = s.metadata_segment_bytes
        else:
            # 4.x replaced the min-bytes escape hatch by an internal override.
            props["internal.metadata.log.segment.bytes"] = s.metadata_segment_bytes
    if s.secure is not None:
        props.update(secure_properties(s.secure, node))
    props.update(s.overrides)
    return "".join(f"{k}={v}\n" for k, v in props.items())


def log4j2_properties() -> str:
    """Kafka 4.x (log4j2): server.log, state-change.log and controller.log per node."""
    lines = ["status = warn", "name = ctrlaudit-node"]
    appenders = {
        "server": ("KafkaAppender", "server.log"),
        "statechange": ("StateChangeAppender", "state-change.log"),
        "controller": ("ControllerAppender", "controller.log"),
    }
    for key, (name, fname) in appenders.items():
        lines += [
            f"appender.{key}.type = File",
            f"appender.{key}.name = {name}",
            f"appender.{key}.fileName = ${{sys:kafka.logs.dir}}/{fname}",
            f"appender.{key}.layout.type = PatternLayout",
            f"appender.{key}.layout.pattern = {LOG_PATTERN}",
        ]
    lines += ["rootLogger.level = INFO", "rootLogger.appenderRef.server.ref = KafkaAppender"]
    for key, logger, ref, appender in (("statechange", "state.change.logger", "sc", "StateChangeAppender"),
                                       ("controller", "org.apache.kafka.controller", "ctl", "ControllerAppender")):
        lines += [f"logger.{key}.name = {logger}", f"logger.{key}.level = INFO", f"logger.{key}.additivity = false",
                  f"logger.{key}.appenderRef.{ref}.ref = {appender}"]
    return "\n".join(lines) + "\n"


def log4j1_properties() -> str:
    """Kafka 3.9 (reload4j): the same three files, as in Kafka's own config/log4j.properties."""
    out = ["log4j.rootLogger=INFO, kafkaAppender"]
    for app, fname in (("kafkaAppender", "server.log"),
                       ("stateChangeAppender", "state-change.log"),
                       ("controllerAppender", "controller.log")):
        out += [
            f"log4j.appender.{app}=org.apache.log4j.FileAppender",
            f"log4j.appender.{app}.File=${{kafka.logs.dir}}/{fname}",
            f"log4j.appender.{app}.layout=org.apache.log4j.PatternLayout",
            f"log4j.appender.{app}.layout.ConversionPattern={LOG_PATTERN}",
        ]
    for logger, level, app in (("state.change.logger", "INFO", "stateChangeAppender"),
                               ("kafka.controller", "TRACE", "controllerAppender"),
                               ("org.apache.kafka.controller", "INFO", "controllerAppender")):
        out += [f"log4j.logger.{logger}={level}, {app}", f"log4j.additivity.{logger}=false"]
    return "\n".join(out) + "\n"


# Kafka's two loggers of who asked, with the files its own config/log4j2.yaml and config/log4j.properties give them
REQUEST_LOGGERS = (("request", "kafka.request.logger", "kafka-request.log"),
                   ("authorizer", "kafka.authorizer.logger", "kafka-authorizer.log"))


def request_loggers_log4j2() -> str:
    """The request and authorizer loggers at DEBUG into Kafka's own files and layout (config/log4j2.yaml's
    RequestAppender, AuthorizerAppender), appended to `log4j2_properties`."""
    out = []
    for key, logger, fname in REQUEST_LOGGERS:
        out += [f"appender.{key}.type = File", f"appender.{key}.name = {key}Appender",
                f"appender.{key}.fileName = ${{sys:kafka.logs.dir}}/{fname}",
                f"appender.{key}.layout.type = PatternLayout", f"appender.{key}.layout.pattern = {LOG_PATTERN}",
                f"logger.{key}.name = {logger}", f"logger.{key}.level = DEBUG", f"logger.{key}.additivity = false",
                f"logger.{key}.appenderRef.{key}.ref = {key}Appender"]
    return "\n".join(out) + "\n"


def request_loggers_log4j1() -> str:
    """The same in log4j 1.x (config/log4j.properties' requestAppender, authorizerAppender)."""
    out = []
    for key, logger, fname in REQUEST_LOGGERS:
        out += [f"log4j.appender.{key}Appender=org.apache.log4j.FileAppender",
                f"log4j.appender.{key}Appender.File=${{kafka.logs.dir}}/{fname}",
                f"log4j.appender.{key}Appender.layout=org.apache.log4j.PatternLayout",
                f"log4j.appender.{key}Appender.layout.ConversionPattern={LOG_PATTERN}",
                f"log4j.logger.{logger}=DEBUG, {key}Appender", f"log4j.additivity.{logger}=false"]
    return "\n".join(out) + "\n"


def tools_log4j2_properties() -> str:
    """Tools print their results on stdout; logging goes to stderr at WARN."""
    return "\n".join([
        "status = error",
        "appender.err.type = Console",
        "appender.err.name = STDERR",
        "appender.err.target = SYSTEM_ERR",
        "appender.err.layout.type = PatternLayout",
        f"appender.err.layout.pattern = {LOG_PATTERN}",
        "rootLogger.level = WARN",
        "rootLogger.appenderRef.err.ref = STDERR",
    ]) + "\n"


def tools_log4j1_properties() -> str:
    return "\n".join([
        "log4j.rootLogger=WARN, stderr",
        "log4j.appender.stderr=org.apache.log4j.ConsoleAppender",
        "log4j.appender.stderr.Target=System.err",
        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.stderr.layout.ConversionPattern={LOG_PATTERN}",
    ]) + "\n"


# ---- ZooKeeper mode (Kafka 3.9: the last line with it) -------------------------------------------
def zk_server_properties(s: ClusterSettings, node: NodeLayout, zookeeper_connect: str) -> str:
    """A ZooKeeper-mode broker: no process.roles, the controller is whichever broker wins ``/controller``.
    The ZooKeeper session timeout is short so a kill -9'd broker's ``/brokers/ids/<id>`` goes away (and
    the controller moves leaders off it) within seconds, as broker.session.timeout.ms does in KRaft."""
    props: dict[str, object] = {
        "broker.id": node.node_id,
        "zookeeper.connect": zookeeper_connect,
        "zookeeper.session.timeout.ms": s.broker_session_timeout_ms,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port}",
        "inter.broker.listener.name": "PLAINTEXT",
        **_broker_basics(s, node),
        "delete.topic.enable": "true",
        # the controller's preferred-leader rebalance would move leaders behind a scenario's back
        "auto.leader.rebalance.enable": "false",
    }
    if s.secure is not None:
        props.update(secure_properties(s.secure, node, kraft=False))
    props.update(s.overrides)
    return "".join(f"{k}={v}\n" for k, v in props.items())


def zoo_cfg(data_dir: Path, client_port: int, *, snap_count: int = 10000, prealloc_kb: int = 1024) -> str:
    """A standalone ZooKeeper. Old transaction logs and snapshots are kept (autopurge off) because they
    are what ``ctrlaudit import zk`` reads; a small preAllocSize keeps the pre-allocated log files small."""
    return "".join(f"{k}={v}\n" for k, v in {
        "tickTime": 500,  # min session timeout = 2 ticks: the brokers' 4 s session is allowed
        "dataDir": data_dir,
        "clientPort": client_port,
        "clientPortAddress": "127.0.0.1",
        "maxClientCnxns": 0,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "srvr,ruok",
        "autopurge.purgeInterval": 0,
        "snapCount": snap_count,
        "preAllocSize": prealloc_kb,
    }.items())


def zk_log4j1_properties() -> str:
    """ZooKeeper's own log (the 3.9.2 jars bind slf4j to reload4j), to zookeeper.log in its directory."""
    return "\n".join([
        "log4j.rootLogger=INFO, file",
        "log4j.appender.file=org.apache.log4j.FileAppender",
        "log4j.appender.file.File=${zookeeper.log.dir}/zookeeper.log",
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.file.layout.ConversionPattern={LOG_PATTERN}",
    ]) + "\n"


# ---- ZooKeeper -> KRaft migration (KIP-866; Kafka's ops.html "ZooKeeper to KRaft Migration") ----------
def _parse_properties(text: str) -> dict[str, object]:
    """A properties text written above back into a dict (to amend one mode's file into another's)."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def migration_controller_properties(s: ClusterSettings, node: NodeLayout, voters: str,
                                    zookeeper_connect: str | None) -> str:
    """The KRaft controller quorum of a migration: controller-only; with ``zookeeper_connect`` in migration mode
    (it copies ZooKeeper's metadata, then writes every change back to ZooKeeper: dual-write); without it, the
    finalized controller. It reaches the ZooKeeper-mode brokers on their PLAINTEXT listener."""
    props: dict[str, object] = {
        "process.roles": "controller",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "listeners": f"CONTROLLER://127.0.0.1:{node.controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": node.data_dir,
        "broker.session.timeout.ms": s.broker_session_timeout_ms,
        "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        "controller.quorum.election.timeout.ms": 1000,
        "controller.quorum.fetch.timeout.ms": 2000,
        # as the ZooKeeper-mode controller was configured: no leader moves behind a scenario's back
        "auto.leader.rebalance.enable": "false",
    }
    if zookeeper_connect is not None:
        props["zookeeper.metadata.migration.enable"] = "true"
        props["zookeeper.connect"] = zookeeper_connect
        props["zookeeper.session.timeout.ms"] = s.broker_session_timeout_ms
    return "".join(f"{k}={v}\n" for k, v in props.items())


def release_line(version: str) -> str:
    """The major.minor of a release (3.6.2 -> 3.6): its latest metadata.version / inter-broker protocol."""
    return ".".join(version.split(".")[:2])


def migrating_zk_broker_properties(s: ClusterSettings, node: NodeLayout, zookeeper_connect: str, voters: str) -> str:
    """A ZooKeeper-mode broker that also registers with the KRaft controllers (migration step 2)."""
    props = _parse_properties(zk_server_properties(s, node, zookeeper_connect))
    props.update({
        "inter.broker.protocol.version": release_line(s.version),
        "zookeeper.metadata.migration.enable": "true",
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    })
    return "".join(f"{k}={v}\n" for k, v in props.items())


def kraft_broker_properties(s: ClusterSettings, node: NodeLayout, voters: str) -> str:
    """The same broker rolled into KRaft mode (migration step 3): node.id = its broker.id, no ZooKeeper."""
    props: dict[str, object] = {
        "process.roles": "broker",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.plaintext_port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        **_broker_basics(s, node),
        "broker.session.timeout.ms": s.broker_session_timeout_ms,
        "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        "auto.leader.rebalance.enable": "false",
    }
    props.update(s.overrides)
    return "".join(f"{k}={v}\n" for k, v in props.items())
