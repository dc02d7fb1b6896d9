"""`make demo` on a real cluster: the whole loop, live.

start a 3-node KRaft Kafka from Maven jars -> start capture (`ctrlaudit capture`: the Faust worker
tailing one node's __cluster_metadata-0, plus the offset sampler) and the archiver (`ctrlaudit
archive`) -> drive a short incident with Kafka's own tools: mark A, kill -9 a broker (fencing, ISR
shrink, leader moves), restart it, preferred election, move a replica, a second principal (User:bob on the
SASL_SSL listener) alters the topic's retention with kafka-configs, kill -9 the active controller (a new
epoch); before each next step, wait until the archive shows what describe shows -> wait until
the archive holds the last change -> stop everything -> `verify` the
archive, load it, and show the state at mark A and at the end, a diff, a timeline, an explanation and
the invariant check; `who` names bob as the one who asked for the retention change, from the nodes'
request logs (kafka.request.logger at DEBUG); last, `import kraft` decodes a copy of the node's
metadata log offline. Everything
lands in demo-out/kraft/ (demo-out/zk/ with ``--zookeeper``), the demo ends with commands to try next on it,
and the cluster is torn down.

`make demo-zk` (``--zookeeper``) runs the same incident and forensics on a ZooKeeper-mode Kafka 3.9 cluster:
capture watches ZooKeeper (`ctrlaudit capture --zookeeper`), marks are ZooKeeper zxids, and the offline
import decodes a copy of ZooKeeper's transaction log (`ctrlaudit import zk`).

`run_scenario` takes a running cluster so that the test suite can drive the same loop
(tests/devtools/test_demo_kafka.py).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from devtools.demo import CLI, demo_key, fresh_folder, hand_over, prove_one, step

TOPIC = "orders"
SENTINEL = "demo-end"  # created last: once its creation is archived, everything before it is too


@dataclass
class Captured:
    archive: Path
    mark_a: int            # metadata offset of mark A (last committed offset when describe was stable)
    mark_end: int
    events: int            # events the archive held when capture stopped
    moved: int             # a partition of the topic the killed broker led at mark A: its leader moved
    topic: str = TOPIC
    described_a: object = None   # observe.Described at mark A (what kafka-topics --describe printed)
    metadata_copy: Path | None = None  # the tailed node's __cluster_metadata-0 (ZooKeeper: its data dir), copied at the end
    mark_b: int = -1       # metadata offset of mark B: the killed broker out of every ISR, its leaderships moved
    described_b: object = None   # observe.Described at mark B
    victim: int = -1       # the broker killed with -9 between marks A and B
    zookeeper: bool = False  # a ZooKeeper-mode cluster: offsets are zxids, the copy is ZooKeeper's data dir
    public_key: Path | None = None  # the public half of the key capture and the archiver signed with
    logs: tuple[Path, ...] = ()  # the nodes' log directories, with their request logs (a cluster with request_logs)
    asked_by: str | None = None  # the second principal who changed the topic over SASL_SSL (a secured cluster)


def _wait(pred, timeout: float, what: str, step_s: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = pred()
        except Exception:  # a tool pointed at a node that just died: ask again
            value = None
        if value:
            return value
        time.sleep(step_s)
    raise SystemExit(f"demo: timed out after {timeout:.0f}s waiting for {what}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(log: Path, lines: int = 15) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _spawn(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    # Own process group: stopping it also stops the worker and sampler `ctrlaudit capture` starts.
    return subprocess.Popen([*CLI, *args], env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 30) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


def _archived(archive: Path) -> list:
    from schemas.archive import clusters, iter_events
    return [e for cl in clusters(archive) for e in iter_events(archive / cl)] if archive.exists() else []


def _sentinel_archived(archive: Path, sentinel: str) -> int:
    from schemas.events import TopicChange
    events = _archived(archive)
    done = any(isinstance(e.payload, TopicChange) and e.payload.topic == sentinel for e in events)
    return len(events) if done else 0


def _archived_partitions(archive: Path, topic: str) -> dict[int, tuple]:
    """The archive's last (leader, replicas, ISR as a set) of each partition of `topic`, by the replay's fold."""
    from schemas.state.delta import ImageBuilder
    image = ImageBuilder().replay_all(_archived(archive)).apply()
    t = image.topics.get_by_name(topic)
    return {} if t is None else {p: (s.leader, tuple(s.replicas), frozenset(s.isr)) for p, s in t.partitions.items()}


def _capture_shows(archive: Path, topic: str, described) -> bool:
    """Has the capture archived what `described` shows of `topic`? The demo waits for it before its next
    step: a ZooKeeper watch reads a znode after it fired, so a watcher that lags one step behind reads the
    next step's version and the one at the mark is a declared gap, not the state describe printed."""
    want = _described_partitions(described, topic)
    return bool(want) and _archived_partitions(archive, topic) == want


def _described_partitions(described, topic: str) -> dict[int, tuple]:
    return {p: (d.leader, tuple(d.replicas), frozenset(d.isr))
            for (t, p), d in described.partitions.items() if t == topic}


def run_scenario(c, out: Path, say=print, topic: str = TOPIC, prefix: str = "ctrlaudit") -> Captured:
    """Capture a live incident on the running cluster `c` into `out`/archive. `topic` is the topic the
    incident happens to; `prefix` names the capture topics (<prefix>.raw, .events, ...) and the sentinel."""
    from devtools.cluster import observe

    zk = getattr(c, "mode", "kraft") == "zk"
    mark = observe.zk_stable_mark if zk else observe.stable_mark
    position = "zxid" if zk else "metadata offset"
    archive = out / "archive"
    controller = c.wait_for_controller()
    source, victim = [i for i in sorted(c.nodes) if i != controller][:2]
    sentinel = f"{prefix}-{SENTINEL}"
    env = dict(os.environ, CTRLAUDIT_DATA_DIR=str(out / "faust"), CTRLAUDIT_ARCHIVE_FLUSH_SECONDS="1",
               CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers, CTRLAUDIT_APP_ID=f"{prefix}-capture",
               CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-archiver", CTRLAUDIT_WEB_PORT=str(_free_port()),
               **{f"CTRLAUDIT_{k}_TOPIC": f"{prefix}.{v}" for k, v in
                  (("RAW", "raw"), ("EVENTS", "events"), ("ALERTS", "alerts"), ("DEAD_LETTER", "dead-letter"),
                   ("CHECKPOINTS", "checkpoints"))})
    key, public = demo_key(out)
    signing = ["--signing-key", str(key)]
    bs = lambda: observe.running_bootstrap(c)  # noqa: E731
    if zk:
        say(f"$ ctrlaudit capture --zookeeper {c.zookeeper.connect} --sample-interval 2 --signing-key {key}   "
            "# ZooKeeper's controller znodes, watched -> raw -> events topic")
        where = ["--zookeeper", c.zookeeper.connect, "--inline-watch"]
    else:
        say(f"$ ctrlaudit capture --metadata-dir {c.metadata_dir(source)} --sample-interval 2 --signing-key {key}   "
            f"# node {source}'s metadata log -> raw -> events topic")
        where = ["--metadata-dir", str(c.metadata_dir(source))]
    capture = _spawn(["capture", *where, "--bootstrap-server", c.bootstrap_servers, "--sample-interval", "2",
                      *signing], env, out / "capture.log")
    say(f"$ ctrlaudit archive --archive-dir {archive} --signing-key {key}   # events topic -> hourly Avro files + "
        "manifests, signed checkpoints beside them")
    archiver = _spawn(["archive", "--archive-dir", str(archive), "--bootstrap-server", c.bootstrap_servers,
                       *signing], env, out / "archive.log")
    try:
        def alive_and(pred):
            def check():
                for name, proc in (("capture", capture), ("archive", archiver)):
                    if proc.poll() is not None:
                        raise SystemExit(f"demo: ctrlaudit {name} exited with {proc.returncode}; the end of "
                                         f"{out / (name + '.log')}:\n{_log_tail(out / (name + '.log'))}")
                return pred()
            return check

        _wait(alive_and(lambda: _archived(archive)), 180, "the first archived events (worker start-up)", 1)
        say(f"capture is live: {len(_archived(archive))} events archived so far")
        c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", topic, "--partitions", "6",
               "--replication-factor", "3", "--config", "min.insync.replicas=2")
        mark_a = mark(c, "A", until=lambda d: sum(t == topic for t, _ in d.partitions) == 6)
        say(f"mark A: {topic} created, {position} {mark_a.offset}")

        def caught_up(described=None):  # None: as describe shows it now
            try:
                _wait(alive_and(lambda: _capture_shows(archive, topic, described or observe.describe(c, topic))),
                      120, f"the capture to archive {topic}'s state", 1)
            except SystemExit as timed_out:  # what differs, and what the capture said: enough to tell why
                want = described or observe.describe(c, topic)
                raise SystemExit(f"{timed_out}\n  describe: {sorted(_described_partitions(want, topic).items())}"
                                 f"\n  archive:  {sorted(_archived_partitions(archive, topic).items())}"
                                 f"\n  the end of {out / 'capture.log'}:\n{_log_tail(out / 'capture.log')}") from None

        caught_up(mark_a.described)

        led = sorted(p for (t, p), d in mark_a.described.partitions.items() if t == topic and d.leader == victim)
        moved = led[0] if led else 0
        say(f"kill -9 broker {victim} (it leads {topic} partitions {led}); the controller fences it, "
            "moves their leaders and shrinks the ISRs...")
        c.kill_node(victim)
        mark_b = mark(c, "B", until=lambda d: all(
            victim not in p.isr for (t, _), p in d.partitions.items() if t == topic), timeout=60)
        say(f"mark B: broker {victim} out of every ISR of {topic}, {position} {mark_b.offset}")
        caught_up(mark_b.described)
        c.start_node(victim)
        c.wait_ready([victim])
        _wait(lambda: all(len(p.isr) == 3 for p in observe.describe(c, topic).partitions.values()),
              90, "the ISRs to expand again")
        caught_up()
        say("preferred leader election on every partition")
        c.tool("leader-election", "--bootstrap-server", bs(), "--election-type", "PREFERRED",
               "--all-topic-partitions", check=False)
        caught_up()
        replicas = observe.describe(c, topic).partitions[(topic, 0)].replicas
        target = list(replicas[:-1])  # drop one replica: the controller runs the reassignment steps
        plan = out / "reassign.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0,
                                                                  "replicas": target}]}))
        say(f"reassign {topic}-0 from {list(replicas)} to {target}")
        c.tool("reassign", "--bootstrap-server", bs(), "--reassignment-json-file", str(plan), "--execute")
        _wait(lambda: "complete" in c.tool("reassign", "--bootstrap-server", bs(), "--reassignment-json-file",
                                           str(plan), "--verify", check=False).stdout, 60, "the reassignment")
        caught_up()
        asked_by = _second_principal(c, topic, out, say)
        say(f"kill -9 the controller (node {controller}): a new controller epoch")
        c.kill_node(controller)
        c.wait_for_controller(exclude=controller)
        c.start_node(controller)
        c.wait_ready([controller])
        c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", sentinel, "--partitions", "1",
               "--replication-factor", "3")
        mark_end = mark(c, "end")
        say(f"mark end: {position} {mark_end.offset}; waiting for the archive to catch up...")
        events = _wait(alive_and(lambda: _sentinel_archived(archive, sentinel)), 300,
                       "the archive to hold the last change", 1)
        time.sleep(2)  # the offset sampler's last samples
    finally:
        _stop(capture)
        _stop(archiver)
    events = max(events, len(_archived(archive)))
    say(f"capture stopped: {events} events archived")
    if zk:
        from devtools.cluster.testing import copy_live_directory
        copy = copy_live_directory(c.zookeeper.data_dir, out / "zookeeper-copy")
        say(f"copied ZooKeeper's data directory to {copy} (for the offline import)")
    else:
        from devtools.cluster.testing import copy_node_metadata
        copy = copy_node_metadata(c, source, out / "metadata-copy")
        say(f"copied node {source}'s metadata log to {copy} (for the offline import)")
    logs = tuple(n.logs_dir for n in c.nodes.values()) if c.settings.request_logs else ()
    return Captured(archive, mark_a.offset, mark_end.offset, events, moved, topic, mark_a.described, copy,
                    mark_b.offset, mark_b.described, victim, zk, public, logs, asked_by)


SECOND = ("bob", "bob-secret")  # the demo's second principal: a PLAIN user of the SASL_SSL listener


def _second_principal(c, topic: str, out: Path, say) -> str | None:
    """On a cluster with a SASL_SSL listener and a PLAIN user: that user alters the topic's retention with
    kafka-configs over SASL_SSL, as an operator on another team would. Returns the principal (None: no such
    listener, nothing done)."""
    sec = c.settings.secure
    if sec is None or not sec.plain_users:
        return None
    user, password = next(iter(sec.plain_users.items()))
    conf = out / f"{user}.properties"
    conf.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common."
                    f'security.plain.PlainLoginModule required username="{user}" password="{password}";\n'
                    f"ssl.truststore.location={sec.truststore}\nssl.truststore.password={sec.password}\n")
    say(f"User:{user} (SASL_SSL, PLAIN) sets {topic}'s retention.ms with kafka-configs --command-config {conf.name}")
    c.tool("configs", "--bootstrap-server", c.sasl_ssl_bootstrap, "--command-config", str(conf), "--alter",
           "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=86400000")
    return f"User:{user}"


def who_asked(archive: Path, logs: tuple[Path, ...], principal: str) -> str:
    """`ctrlaudit who` of the archive's cluster over the nodes' logs: what `principal` changed (printed, returned)."""
    from schemas.archive import clusters

    (cluster,) = clusters(archive)
    return step(f"who asked: {principal}'s changes, from the nodes' request and authorizer logs", "who",
                str(archive / cluster), *(a for d in logs for a in ("--logs", str(d))), "--principal", principal)


def forensics(cap: Captured, out: Path) -> None:
    """What an engineer does afterwards, through the real CLI, from the archive alone."""
    store = str(out / "demo.duckdb")
    trust = ["--trusted-key", str(cap.public_key)] if cap.public_key else []
    step("is the archive complete and untampered? (chain, manifests, and every signed checkpoint against the "
         "public key)", "verify", str(cap.archive), *trust)
    if cap.logs and cap.public_key is not None:
        step("keep who asked: the nodes' request and authorizer logs, appended to the history, chained and signed",
             "import", "requests", *map(str, cap.logs), "--out", str(cap.archive), "--signing-key",
             str(cap.public_key.with_suffix("")))
    step("load it into the embedded store", "load", str(cap.archive), "--store", store)
    step("the state at mark A, as kafka-topics --describe printed it then", "state", "--store", store,
         "--offset", str(cap.mark_a), "--topic", cap.topic)
    step("the state at the end", "state", "--store", store, "--topic", cap.topic)
    step("everything that changed since mark A", "diff", "--store", store, "--from-offset", str(cap.mark_a),
         "--topic", cap.topic)
    p = str(cap.moved)
    step(f"the history of {cap.topic}-{p}", "timeline", "--store", store, "--topic", cap.topic, "--partition", p)
    step(f"why {cap.topic}-{p}'s leader last moved", "explain", "--store", store, "--topic", cap.topic, "--partition", p,
         "--last-leader-change")
    # --force: a second run into the same directory replaces the demo's own reports
    step("the invariant catalog over the whole history", "check", store, "--json", str(out / "check.json"),
         "--force", check=False)
    if cap.logs and cap.asked_by:
        who_asked(cap.archive, cap.logs, cap.asked_by)
    if cap.metadata_copy is not None:
        what = ("the copy of ZooKeeper's transaction log", "zk") if cap.zookeeper else ("the copied metadata log", "kraft")
        step(f"the same history offline: decode {what[0]} (what an operator does with a copy taken after an "
             "incident)", "import", what[1], str(cap.metadata_copy), "--out", str(out / "imported"))
        step("the events decoded offline, verified", "verify", str(out / "imported"))
    report = out / "incident.html"
    step("the incident report: summary, plots, drill-down per partition (one HTML file, no network needed)",
         "report", "--store", store, "--check-json", str(out / "check.json"), "--out", str(report), "--force")
    print(f"\nThe incident report: {report.resolve()}")
    proof = prove_one(cap.archive, cap.public_key, out, cap.events // 2) if cap.public_key else None
    hand_over(out, Path(store), cap.topic, cap.moved, cap.mark_a,
              (proof, cap.public_key) if proof is not None and cap.public_key is not None else None)


def _certificates(d: Path):  # type: ignore[no-untyped-def]
    """The demos' certificates (devtools/cluster/tls.py: valid 7 days), made once and kept beside the demos' folders
    for 6 days: making them is a dozen keytool runs, the slowest part of the second principal's step."""
    from devtools.cluster.tls import DEFAULT_PASSWORD, TlsFiles, make_tls

    kept = TlsFiles(d, DEFAULT_PASSWORD, d / "ca.pem", d / "truststore.p12", d / "broker.p12", d / "client.p12")
    if kept.client_keystore.exists() and time.time() - kept.client_keystore.stat().st_mtime < 6 * 86400:
        return kept
    import shutil

    shutil.rmtree(d, ignore_errors=True)  # expired, or cut short: keytool would not overwrite a store's entries
    return make_tls(d)


def main(argv: list[str] | None = None) -> None:
    from devtools.cluster import ClusterError
    from devtools.cluster.config import SecureListeners
    from devtools.cluster.testing import running_cluster
    from devtools.cluster.zkmode import ZkKafkaCluster

    zk = "--zookeeper" in (sys.argv[1:] if argv is None else argv)
    out = fresh_folder("zk" if zk else "kraft")
    # the SASL_SSL listener's, for the second principal; absolute: each broker runs in its own directory
    tls = _certificates(out.parent.resolve() / "tls")
    secure = dict(secure=SecureListeners(tls.broker_keystore, tls.truststore, tls.password,
                                         plain_users=dict([SECOND])), request_logs=True)
    if zk:
        print("starting ZooKeeper and 3 ZooKeeper-mode brokers (Kafka 3.9 jars from Maven Central, cached in "
              ".kafka-cache/)...", flush=True)
    else:
        print("starting a 3-node KRaft cluster (Kafka 4.x jars from Maven Central, cached in .kafka-cache/)...",
              flush=True)
    try:
        with (running_cluster(out / "cluster", "3.9", cluster_class=ZkKafkaCluster, **secure) if zk
              else running_cluster(out / "cluster", "4.x", **secure)) as c:
            cap = run_scenario(c, out, say=lambda s: print(s, flush=True))
    except ClusterError as exc:
        raise SystemExit(f"demo: {exc}") from None
    print("cluster stopped; everything below reads only the archive\n")
    forensics(cap, out)


if __name__ == "__main__":
    sys.exit(main())
