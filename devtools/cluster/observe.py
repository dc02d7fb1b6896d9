"""What Kafka's own tools say about a running cluster, parsed: ``kafka-topics --describe``,
``kafka-metadata-quorum describe --status`` and the metadata shell (``MetadataShell``) over a
copied segment or snapshot. Used as the reference the replayed state is compared against."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from services.capture.kafka_protocol import PartitionInfo

from .manager import ClusterError, KafkaCluster


def _ids(text: str) -> tuple[int, ...]:
    text = text.strip()
    return tuple(int(x) for x in text.split(",") if x.strip()) if text else ()


@dataclass(frozen=True)
class DescribedPartition(PartitionInfo):
    """One partition line of ``kafka-topics --describe`` (leader -1 = ``none``): what the capture's metadata
    request gives of a partition, and its reassignment and ELRs."""

    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    elr: tuple[int, ...] | None = None          # None: the tool's version does not print it
    last_known_elr: tuple[int, ...] | None = None


@dataclass
class Described:
    """``kafka-topics --describe`` of a whole cluster: topics (name -> id) and partitions."""

    topic_ids: dict[str, str] = field(default_factory=dict)
    partitions: dict[tuple[str, int], DescribedPartition] = field(default_factory=dict)
    text: str = ""


def in_sync(d: Described, *topics: str) -> bool:
    """Whether every partition (of `topics`; none given: of every topic) has a leader, every replica in its ISR and
    no reassignment under way: the state a test waits for before its next fault."""
    return all(set(p.isr) == set(p.replicas) and p.leader >= 0 and not p.adding and not p.removing
               for (t, _), p in d.partitions.items() if not topics or t in topics)


def parse_describe(text: str) -> Described:
    out = Described(text=text)
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = {}
        for part in line.strip("\n").split("\t"):
            if ":" in part:
                k, v = part.split(":", 1)
                fields[k.strip()] = v.strip()
        if not line.startswith("\t") and "PartitionCount" in fields:
            out.topic_ids[fields["Topic"]] = fields.get("TopicId", "")
        elif "Partition" in fields:
            leader = fields["Leader"]
            p = DescribedPartition(
                topic=fields["Topic"], partition=int(fields["Partition"]),
                leader=-1 if leader == "none" else int(leader),
                replicas=_ids(fields["Replicas"]), isr=_ids(fields["Isr"]),
                adding=_ids(fields.get("Adding Replicas", "")),
                removing=_ids(fields.get("Removing Replicas", "")),
                # "N/A" in ZooKeeper mode (3.9): no ELR there, as when the tool does not print it
                elr=_ids(fields["Elr"]) if fields.get("Elr", "N/A") != "N/A" else None,
                last_known_elr=(_ids(fields["LastKnownElr"]) if fields.get("LastKnownElr", "N/A") != "N/A"
                                else None))
            out.partitions[(p.topic, p.partition)] = p
    return out


def describe(cluster: KafkaCluster, *topics: str) -> Described:
    """``kafka-topics --describe`` (all topics, or the given ones), asked of the running nodes."""
    args = ["--describe"]
    for t in topics:
        args += ["--topic", t]
    return parse_describe(cluster.tool("topics", "--bootstrap-server", running_bootstrap(cluster),
                                       *args).stdout)


def running_bootstrap(cluster: KafkaCluster) -> str:
    """Bootstrap servers of the nodes that run now (a tool pointed at a dead node waits)."""
    live = [n.bootstrap for i, n in cluster.nodes.items()
            if cluster.is_running(i) and i not in getattr(cluster, "paused", ())]
    if not live:
        raise ClusterError("no node is running")
    return ",".join(live)


def quorum_status(cluster: KafkaCluster) -> dict[str, str]:
    out = cluster.tool("metadata-quorum", "--bootstrap-server", running_bootstrap(cluster),
                       "describe", "--status").stdout
    status = {}
    for line in out.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            status[k.strip()] = v.strip()
    return status


def high_watermark(cluster: KafkaCluster) -> int:
    """The metadata log's high watermark: records at offsets < HW are committed."""
    return int(quorum_status(cluster)["HighWatermark"])


@dataclass
class Mark:
    """A point of the scenario: what describe showed, and the committed offset at that moment."""

    name: str
    offset: int               # last committed offset (HW - 1) while describe was stable
    described: Described
    controller: int = -1
    controller_epoch: int = -1
    time_ms: int = -1         # the wall-clock time between two equal describes (-1: not taken)


def stable_mark(cluster: KafkaCluster, name: str, *, settle: float = 1.0, timeout: float = 60,
                until=None) -> Mark:
    """Describe, read the HW, describe again; accept when both describes agree (and ``until``,
    if given, holds for the describe). The state as of HW-1 is then what describe showed: the
    brokers serve only committed metadata, and nothing changed in between. ``time_ms`` is taken right before the
    second describe: the state at that wall-clock time is what describe showed too (the brokers' own logs are
    asked by time), and every node had the settle time before it to log what it applied."""
    deadline = time.monotonic() + timeout
    first: Described | None = None
    last_err = ""
    while first is None:
        try:
            first = describe(cluster)
        except Exception as e:
            last_err = str(e)
            if time.monotonic() > deadline:
                raise ClusterError(f"mark {name}: describe failed: {last_err}") from None
            time.sleep(settle)
    while True:
        time.sleep(settle)
        try:
            status = quorum_status(cluster)
            time.sleep(settle)
            at = int(time.time() * 1000)
            second = describe(cluster)
        except Exception as e:  # a tool run against a node that just died: try again
            last_err = str(e)
            second = None
        if second is not None and second.partitions == first.partitions \
                and second.topic_ids == first.topic_ids and (until is None or until(second)):
            return Mark(name, int(status["HighWatermark"]) - 1, second,
                        int(status.get("LeaderId", -1)), int(status.get("LeaderEpoch", -1)), time_ms=at)
        if time.monotonic() > deadline:
            raise ClusterError(f"mark {name}: describe not stable/condition not met after {timeout}s "
                               f"{last_err}\n{(second or first).text}")
        if second is not None:
            first = second


def wait_describe(cluster: KafkaCluster, pred, *topics: str, timeout: float = 60,
                  step: float = 0.5) -> Described:
    deadline = time.monotonic() + timeout
    while True:
        try:
            d = describe(cluster, *topics)
            if pred(d):
                return d
        except Exception:
            d = None
        if time.monotonic() > deadline:
            raise ClusterError(f"condition not met after {timeout}s:\n{d.text if d else ''}")
        time.sleep(step)


# ---- the metadata shell ----------------------------------------------------------------------

_REG = re.compile(r"^(?:>> )*PartitionRegistration\((.*)\)\s*$")
_BROKER = re.compile(r"^(?:>> )*BrokerRegistration\((.*)\)\s*$")


@dataclass(frozen=True)
class ShellPartition:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing: tuple[int, ...]
    adding: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    leader: int
    leader_recovery_state: str
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True)
class ShellBroker:
    broker_id: int
    epoch: int
    fenced: bool
    in_controlled_shutdown: bool


def _fields(body: str) -> dict[str, str]:
    """``k=v, k=[a, b], ...`` (brackets and braces may hold commas)."""
    out, depth, key, cur = {}, 0, None, ""
    for ch in body + ",":
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "=" and depth == 0 and key is None:
            key, cur = cur.strip(), ""
            continue
        if ch == "," and depth == 0:
            if key is not None:
                out[key] = cur.strip()
            key, cur = None, ""
            continue
        cur += ch
    return out


def _list(v: str) -> tuple[int, ...]:
    return _ids(v.strip("[]").replace(" ", ""))


def parse_partition_registration(line: str) -> ShellPartition:
    m = _REG.match(line.strip())
    if not m:
        raise ValueError(f"not a PartitionRegistration: {line!r}")
    f = _fields(m.group(1))
    return ShellPartition(_list(f["replicas"]), _list(f["isr"]), _list(f["removingReplicas"]),
                          _list(f["addingReplicas"]), _list(f.get("elr", "[]")),
                          _list(f.get("lastKnownElr", "[]")), int(f["leader"]), f["leaderRecoveryState"],
                          int(f["leaderEpoch"]), int(f["partitionEpoch"]))


def parse_broker_registration(line: str) -> ShellBroker:
    m = _BROKER.match(line.strip())
    if not m:
        raise ValueError(f"not a BrokerRegistration: {line!r}")
    f = _fields(m.group(1))
    return ShellBroker(int(f["id"]), int(f["epoch"]), f["fenced"] == "true", f["inControlledShutdown"] == "true")


@dataclass
class ShellImage:
    topic_ids: dict[str, str]
    partitions: dict[tuple[str, int], ShellPartition]
    brokers: dict[int, ShellBroker]


def shell(cluster_or_tools, file: Path | str, commands: list[str], timeout: float = 300) -> list[str]:
    """Run ``MetadataShell --snapshot file`` with commands on stdin; the output split per command
    (the shell prints a ``>> `` prompt before each command's output)."""
    tools = getattr(cluster_or_tools, "tools", cluster_or_tools)
    text = "\n".join(commands) + "\nexit\n"
    out = tools.run("metadata-shell", "--snapshot", str(file), input=text, timeout=timeout).stdout
    # Everything after the banner; chunks separated by the prompt.
    body = out.split("[ Kafka Metadata Shell ]", 1)[-1]
    chunks = body.split(">> ")[1:]
    return [c.strip("\n") for c in chunks][:len(commands)]


def shell_image(cluster_or_tools, file: Path | str) -> ShellImage:
    """Topics (name, id), partitions and brokers of the image the shell builds from ``file``."""
    found = shell(cluster_or_tools, file, ["find /image/topics/byName", "ls /image/cluster/brokers"])
    paths = [p for p in found[0].splitlines() if p.startswith("/image/topics/byName/")]
    topics = sorted({p.split("/")[4] for p in paths})
    parts = sorted((p.split("/")[4], int(p.split("/")[5])) for p in paths
                   if len(p.split("/")) == 6 and p.split("/")[5].isdigit())
    brokers = [int(b) for b in found[1].split()] if len(found) > 1 else []
    cmds = [f"cat /image/topics/byName/{t}/id" for t in topics]
    cmds += [f"cat /image/topics/byName/{t}/{p}" for t, p in parts]
    cmds += [f"cat /image/cluster/brokers/{b}" for b in brokers]
    outs = shell(cluster_or_tools, file, cmds) if cmds else []
    if len(outs) != len(cmds):
        raise ClusterError(f"metadata shell answered {len(outs)} of {len(cmds)} commands")
    ids = {t: outs[i].strip() for i, t in enumerate(topics)}
    k = len(topics)
    partitions = {tp: parse_partition_registration(outs[k + i]) for i, tp in enumerate(parts)}
    k += len(parts)
    brks = {}
    for i in range(len(brokers)):
        reg = parse_broker_registration(outs[k + i])
        brks[reg.broker_id] = reg
    return ShellImage(ids, partitions, brks)


def zk_stable_mark(cluster, name: str, *, settle: float = 0.5, timeout: float = 60, until=None) -> Mark:
    """A mark on a ZooKeeper-mode cluster (``ZkKafkaCluster``): ZooKeeper's last zxid, describe, the last zxid
    again; accepted when no transaction happened in between (and ``until`` holds), so the state as of that
    zxid is what describe showed, and so is the state at ``time_ms`` (taken after describe answered, before the
    zxid was read again: the brokers' logs are asked by time). The controller is the broker the brokers name
    (after /controller's write)."""
    deadline = time.monotonic() + timeout
    last_err = ""
    while True:
        try:
            before = cluster.zookeeper.last_zxid()
            time.sleep(settle)
            described = describe(cluster)
            at = int(time.time() * 1000)
            after = cluster.zookeeper.last_zxid()
            if before == after and (until is None or until(described)):
                return Mark(name, after, described, cluster.active_controller(), time_ms=at)
            last_err = f"zxid moved {before:#x} -> {after:#x}" if before != after else "condition not met"
        except Exception as e:  # noqa: BLE001 - a tool run against a broker that just died: try again
            last_err = str(e)
        if time.monotonic() > deadline:
            raise ClusterError(f"mark {name}: not stable after {timeout}s ({last_err})")
        time.sleep(settle)


def timed_mark(cluster, name: str, *, settle: float = 1.0, timeout: float = 90, until=None) -> Mark:
    """A mark by wall-clock time, for a history whose positions change kind (a ZooKeeper -> KRaft migration:
    zxids, then metadata offsets): describe, wait, take the time, wait, describe again; accepted when both
    describes agree (and ``until`` holds). Nothing the brokers show changed around that time, so the state as of
    it (``ctrlaudit state --time``) is what describe showed. ``offset`` is -1: the mark has no log position."""
    deadline = time.monotonic() + timeout
    last_err = ""
    while True:
        try:
            first = describe(cluster)
            time.sleep(settle)
            at = int(time.time() * 1000)
            time.sleep(settle)
            second = describe(cluster)
            if second.partitions == first.partitions and second.topic_ids == first.topic_ids and \
                    (until is None or until(second)):
                return Mark(name, -1, second, time_ms=at)
            last_err = "describe changed" if second.partitions != first.partitions else "condition not met"
        except Exception as e:  # noqa: BLE001 - a tool run against a broker that is restarting: try again
            last_err = str(e)
        if time.monotonic() > deadline:
            raise ClusterError(f"mark {name}: not stable after {timeout}s ({last_err})")
