"""Who asked, on secured real clusters: Kafka 4.x in KRaft mode with StandardAuthorizer and 3.9 in ZooKeeper mode
with AclAuthorizer, 3 nodes each, a SASL_SSL listener (SCRAM-SHA-512) for the clients and PLAINTEXT for the brokers
themselves (User:ANONYMOUS, the super user). Three principals: User:alice and User:bob, each granted by ACLs what
they do, and User:mallory, granted nothing. Each runs Kafka's own tools with --command-config:

- alice: kafka-topics --create, --alter --partitions, kafka-configs --alter, kafka-reassign-partitions --execute;
- bob: kafka-topics --create, kafka-configs --alter, kafka-leader-election --election-type PREFERRED (of alice's
  reassigned partition, whose preferred replica is not its leader), kafka-topics --delete;
- mallory: kafka-topics --create and kafka-leader-election: denied.

Then every node's request and authorizer logs are imported into the cluster's archive (`ctrlaudit import requests`,
after `ctrlaudit import kraft|zk` of the cluster's history) and `ctrlaudit who --json` is asked, as a user asks it:
each of the principals' changes is attributed to that principal's request, none to another; what the controller did
on its own (ISR changes, the reassignment completing, brokers registering) is the controller's or the cluster's
start; nothing is ambiguous or unattributed; mallory's attempts are listed as denied and changed nothing; and
`who --principal User:bob` lists bob's changes and only those."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.services.requests.real_cluster import audited_cluster, cli, import_history, kept

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

USERS = {"alice": "alice-Secret-1", "bob": "bob-Secret-2", "mallory": "mallory-Secret-3"}
ALICE, BOB, MALLORY = (f"User:{u}" for u in USERS)
ORDERS, EVENTS, MALLORYS = "alice-orders", "bob-events", "mallory-topic"  # alice's, bob's, mallory's attempt
ALTER_CONFIGS = ("IncrementalAlterConfigs", "AlterConfigs")  # kafka-configs sends one or the other by release


@dataclass
class Run:
    version: str
    archive: Path
    history: dict  # seq -> ControllerEvent
    who: dict  # `who --json`
    bobs: dict  # `who --principal User:bob --json`
    mallorys: dict  # `who --principal User:mallory --json`
    text: str  # `who`
    refused: list[str] = field(default_factory=list)  # what mallory's tools printed


def _grant(bootstrap: str) -> None:
    """ACLs, by the super user over PLAINTEXT: alice may do anything to topics named alice-*, reassign and describe
    the cluster; bob anything to topics named bob-* and elect leaders; mallory nothing."""
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)

    from devtools.cluster.testing import wait_until

    topic_ops = (AclOperation.CREATE, AclOperation.ALTER, AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE,
                 AclOperation.DESCRIBE_CONFIGS, AclOperation.DELETE)
    grants = [(ALICE, ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED, topic_ops),
              (ALICE, ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
               (AclOperation.ALTER, AclOperation.DESCRIBE)),
              (BOB, ResourceType.TOPIC, "bob-", ResourcePatternType.PREFIXED, topic_ops),
              (BOB, ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, (AclOperation.ALTER,))]
    bindings = [AclBinding(rtype, name, pattern, who, "*", op, AclPermissionType.ALLOW)
                for who, rtype, name, pattern, ops in grants for op in ops]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wait_until(lambda: admin.list_topics(timeout=5).controller_id >= 0, 60, "a controller")
    for f in admin.create_acls(bindings).values():
        f.result(30)
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    wait_until(lambda: len(admin.describe_acls(every).result(10)) == len(bindings), 30, "the ACLs in force")


def _client_config(directory: Path, user: str, truststore: Path, password: str) -> Path:
    path = directory / f"{user}.properties"
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="{user}" password="{USERS[user]}";\n'
                    f"ssl.truststore.location={truststore}\nssl.truststore.password={password}\n")
    return path


def _partitions(bootstrap: str, topic: str) -> dict[int, tuple[int, tuple[int, ...], frozenset[int]]]:
    """Each partition's (leader, replicas, ISR) as a broker's Metadata answer has them (the super user's view)."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return {}
    return {p: (m.leader, tuple(m.replicas), frozenset(m.isrs)) for p, m in t.partitions.items()}


def _scenario(c, configs: dict[str, Path]) -> list[str]:  # type: ignore[no-untyped-def]
    """The three principals' tools, in order; what mallory's printed."""
    from devtools.cluster.testing import wait_until

    from devtools.cluster.tools import version_tuple

    def as_(user: str, tool: str, *args: str, check: bool = True):  # type: ignore[no-untyped-def]
        # kafka-leader-election took its client properties as --admin.config before 4.1 (KIP-1147)
        option = "--admin.config" if tool == "leader-election" and version_tuple(c.version) < (4, 1) \
            else "--command-config"
        return c.tool(tool, "--bootstrap-server", c.sasl_ssl_bootstrap, option, str(configs[user]), *args,
                      check=check)

    plain = c.bootstrap_servers
    as_("alice", "topics", "--create", "--topic", ORDERS, "--partitions", "2", "--replication-factor", "2")
    wait_until(lambda: len(_partitions(plain, ORDERS)) == 2, 30, f"{ORDERS} created")
    as_("alice", "topics", "--alter", "--topic", ORDERS, "--partitions", "3")
    wait_until(lambda: len(_partitions(plain, ORDERS)) == 3, 30, f"{ORDERS} grown")
    as_("alice", "configs", "--alter", "--entity-type", "topics", "--entity-name", ORDERS,
        "--add-config", "retention.ms=1200000")
    as_("bob", "topics", "--create", "--topic", EVENTS, "--partitions", "1", "--replication-factor", "3")
    wait_until(lambda: _partitions(plain, EVENTS), 30, f"{EVENTS} created")
    as_("bob", "configs", "--alter", "--entity-type", "topics", "--entity-name", EVENTS,
        "--add-config", "retention.ms=3600000")
    # alice moves partition 0 onto the broker it was not on, that broker first: its leader stays (it is in the new
    # replica set), its preferred replica is another one
    leader, replicas, _ = _partitions(plain, ORDERS)[0]
    (spare,) = set(c.nodes) - set(replicas)
    target = [spare, leader]
    plan = c.dir / "reassign.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": ORDERS, "partition": 0, "replicas": target}]}))
    as_("alice", "reassign", "--reassignment-json-file", str(plan), "--execute")
    wait_until(lambda: _partitions(plain, ORDERS)[0] == (leader, tuple(target), frozenset(target)), 60,
               "the reassignment to complete")
    refused = []
    for tool, args in (("topics", ("--create", "--topic", MALLORYS, "--partitions", "1", "--replication-factor", "1")),
                       ("leader-election", ("--election-type", "PREFERRED", "--topic", ORDERS, "--partition", "0"))):
        res = as_("mallory", tool, *args, check=False)
        assert res.returncode != 0, res.stdout
        refused.append(res.stdout + res.stderr)
    as_("bob", "leader-election", "--election-type", "PREFERRED", "--topic", ORDERS, "--partition", "0")
    wait_until(lambda: _partitions(plain, ORDERS)[0][0] == spare, 30, "the preferred leader elected")
    as_("bob", "topics", "--delete", "--topic", EVENTS)
    wait_until(lambda: _deleted(c, EVENTS), 60, f"{EVENTS} deleted")
    return refused


def _deleted(c, topic: str) -> bool:  # type: ignore[no-untyped-def]
    """Whether the topic's deletion is done: in KRaft once Metadata answers without it (the controller's records
    are committed before the answer); in ZooKeeper mode the Metadata answers leave it out as soon as its deletion
    begins, and the controller deletes its znode (the change `import zk` reads) once its replicas are gone."""
    if _partitions(c.bootstrap_servers, topic):
        return False
    if getattr(c, "mode", "kraft") != "zk":
        return True
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=c.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        return not zk.exists(f"/brokers/topics/{topic}") and not zk.exists(f"/admin/delete_topics/{topic}")
    finally:
        zk.stop()
        zk.close()


def _logged(c) -> bool:  # type: ignore[no-untyped-def]
    """Whether the last request's line (bob's DeleteTopics, as the broker that took it answered it) is written: a
    request log line is written when the response is sent."""
    from services.requests.files import read_logs
    from services.requests.reader import Reading
    from schemas.requests.record import REQUEST_LOGGER

    lines = read_logs([n.logs_dir for n in c.nodes.values()], Reading())
    return any(r.log == REQUEST_LOGGER and r.api == "DeleteTopics" and r.principal == BOB and not r.forwarded
               for r in lines)


@pytest.fixture(scope="module", params=["4.x", "3.9"])
def run(request, tmp_path_factory) -> Run:
    from devtools.cluster.config import SecureListeners
    from devtools.cluster.testing import java_available, wait_until
    from devtools.cluster.tls import make_tls
    from schemas.archive.listing import iter_events

    if not java_available():
        pytest.skip("needs java and mvn")
    if "CTRLAUDIT_KAFKA_CACHE" not in os.environ and Path("/work/main/.kafka-cache").is_dir():
        os.environ["CTRLAUDIT_KAFKA_CACHE"] = "/work/main/.kafka-cache"
    version = request.param
    work = tmp_path_factory.mktemp(f"secured-{version}")
    tls = make_tls(work / "tls")
    configs = {u: _client_config(work, u, tls.truststore, tls.password) for u in USERS}
    secure = SecureListeners(tls.broker_keystore, tls.truststore, tls.password, scram_users=dict(USERS))
    # no automatic preferred-leader rebalance: the preferred elections are the ones asked for
    with audited_cluster(version, work / "cluster", nodes=3, heap="384m", secure=secure,
                         overrides={"auto.leader.rebalance.enable": "false"}) as c:
        _grant(c.bootstrap_servers)
        refused = _scenario(c, configs)
        wait_until(lambda: _logged(c), 30, "the last request logged")
    archive = import_history(c, version, work / "archive")
    logs = [str(n.logs_dir) for n in c.nodes.values()]
    every = [a for d in logs for a in ("--logs", d)]
    got = cli("who", str(archive), *every, "--json", "-")
    assert got.returncode == 0, got.stderr
    from_logs = json.loads(got.stdout)
    kept(cli, archive, logs, from_logs, nodes={d: i for i, d in enumerate(logs, 1)})  # `who` from the archive now
    answers = {}
    for who in (None, BOB, MALLORY):
        r = cli("who", str(archive), *(["--principal", who] if who else []), "--json", "-")
        assert r.returncode == 0, r.stderr
        answers[who] = json.loads(r.stdout)
    text = cli("who", str(archive))
    assert text.returncode == 0, text.stderr
    history = {e.seq: e for e in iter_events(archive)}
    return Run(version, archive, history, answers[None], answers[BOB], answers[MALLORY], text.stdout, refused)


def _named(e) -> str | None:  # type: ignore[no-untyped-def]
    p = e.payload
    return getattr(p, "topic", None) or getattr(p, "resource_name", None)


# who did what: the topic a change is of, and the API of the request that made it -> its principal
DID = {(ORDERS, "CreateTopics"): ALICE, (ORDERS, "CreatePartitions"): ALICE, (ORDERS, "AlterPartitionReassignments"):
       ALICE, (ORDERS, "ElectLeaders"): BOB, (EVENTS, "CreateTopics"): BOB, (EVENTS, "DeleteTopics"): BOB,
       **{(ORDERS, api): ALICE for api in ALTER_CONFIGS}, **{(EVENTS, api): BOB for api in ALTER_CONFIGS}}


def test_each_change_is_its_principals_request(run):
    """Every change a request made is the request of the principal who made it, all its lines (in KRaft the
    broker's and the controller's of the forwarded request) that principal's; every tool run that changed something
    is there; nothing is ambiguous or unattributed, nothing was read badly."""
    assert run.who["not_read"] == [] and run.who["clocks"] == []
    assert not [c for c in run.who["changes"] if c["cause"] in ("ambiguous", "unattributed")], \
        [(c["seq"], c["why"]) for c in run.who["changes"] if c["cause"] in ("ambiguous", "unattributed")]
    seen = set()
    for c in run.who["changes"]:
        if c["cause"] != "request":
            continue
        e = run.history[c["seq"]]
        (lines,) = c["requests"]
        api = lines[0]["api"]
        assert (_named(e), api) in DID, (c, e.payload)
        assert {r["principal"] for r in lines} | {d["principal"] for d in c["decisions"]} == {DID[_named(e), api]}, c
        assert lines[0]["listener"] == "SASL_SSL" and lines[0]["forwarded"] is False, lines
        if run.version == "4.x":  # the broker forwarded it to the active controller, whose line follows (and the
            # line of a controller that was no longer active, where the broker forwarded it first: NOT_CONTROLLER)
            assert [r["forwarded"] for r in lines][:2] == [False, True] and all(r["forwarded"] for r in lines[1:])
        seen.add((_named(e), api))
    assert {k for k in DID if k[1] not in ALTER_CONFIGS} <= seen, sorted(set(DID) - seen)
    assert any(k in seen for k in ((ORDERS, api) for api in ALTER_CONFIGS))
    assert any(k in seen for k in ((EVENTS, api) for api in ALTER_CONFIGS))
    assert f"requested by {BOB} from 127.0.0.1 (client id " in run.text and " ElectLeaders on listener SASL_SSL (" \
        in run.text
    assert f"requested by {ALICE} from 127.0.0.1 (client id " in run.text
    assert ", received by node " in run.text  # the node whose log has the client's line, kept with the request


def test_what_the_controller_did_on_its_own_is_the_controllers(run):
    """The reassignment completing, the ISR changes around it, the brokers registering: the controller's (or the
    state the history starts with), not any principal's."""
    from schemas.events import BrokerChange, PartitionChange, PartitionChangeKind as K

    causes: dict[str, set[str]] = {"complete": set(), "isr": set(), "broker": set()}
    for c in run.who["changes"]:
        p = run.history[c["seq"]].payload
        if isinstance(p, PartitionChange) and K.REASSIGNMENT_COMPLETE in p.changes:
            causes["complete"].add(c["cause"])
        elif isinstance(p, PartitionChange) and set(p.changes) <= {K.ISR, K.LEADER_EPOCH}:
            causes["isr"].add(c["cause"])
        elif isinstance(p, BrokerChange):
            causes["broker"].add(c["cause"])
    assert causes["complete"] == {"controller"}, causes
    assert causes["isr"] <= {"controller"}, causes
    if run.version == "3.9":  # the ZooKeeper-mode controller writes the reassignment's ISR steps one by one (KRaft
        # completes it in one record)
        assert causes["isr"], causes
    assert causes["broker"] and causes["broker"] <= {"controller", "bootstrap"}, causes


def test_mallorys_attempts_are_denied_and_changed_nothing(run):
    assert all("uthoriz" in out for out in run.refused), run.refused  # "...AuthorizationException", "... failed"
    denied = [d for d in run.who["denied"] if d["principal"] == MALLORY]
    assert {d["api"] for d in denied} == {"CreateTopics", "ElectLeaders"}, run.who["denied"]
    assert {d["principal"] for d in run.who["denied"]} == {MALLORY}  # alice and bob were never refused
    assert not [c for c in run.who["changes"] for g in c["requests"] for r in g if r["principal"] == MALLORY]
    assert not [e for e in run.history.values() if _named(e) == MALLORYS]
    assert run.mallorys["changes"] == [] and run.mallorys["denied"] == run.who["denied"]
    assert f"denied: {MALLORY} from 127.0.0.1 " in run.text


def test_who_principal_bob_lists_bobs_changes_only(run):
    bobs = {c["seq"] for c in run.who["changes"]
            if any(r["principal"] == BOB for g in c["requests"] for r in g)}
    assert bobs and {c["seq"] for c in run.bobs["changes"]} == bobs
    assert {(_named(run.history[c["seq"]]), c["requests"][0][0]["api"]) for c in run.bobs["changes"]} <= {
        k for k, who in DID.items() if who == BOB}
    assert {r["principal"] for c in run.bobs["changes"] for g in c["requests"] for r in g} == {BOB}
    assert run.bobs["denied"] == []
