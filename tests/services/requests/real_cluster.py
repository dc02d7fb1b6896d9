"""What the real-cluster tests of `who` share (test_real_kafka.py: one admin; test_secured_attribution.py: several
principals on a secured cluster): a dev cluster whose request and authorizer loggers are at DEBUG in Kafka's own
layout and files, with an ACL authorizer; the CLI run as a user runs it; and the check that `ctrlaudit import
requests` keeps in the archive what `who` reads from the logs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[3]
AUTHORIZERS = {"3.9": "kafka.security.authorizer.AclAuthorizer",  # ZooKeeper mode
               "4.x": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}  # KRaft

Cli = Callable[..., "subprocess.CompletedProcess[str]"]


def audited_cluster(version: str, root: Path, *, nodes: int = 1, overrides: dict[str, str] | None = None,
                    **kw):  # type: ignore[no-untyped-def]
    """A running cluster (KRaft for 4.x, ZooKeeper mode for 3.9) with the request and authorizer loggers at DEBUG in
    Kafka's own layout and files (ClusterSettings.request_logs) and the mode's ACL
    authorizer, User:ANONYMOUS (the PLAINTEXT listener: inter-broker, and the test's own view) a super user;
    `overrides` and `kw` (secure=, heap=) as running_cluster takes them."""
    from devtools.cluster.manager import KafkaCluster
    from devtools.cluster.testing import running_cluster
    from devtools.cluster.zkmode import ZkKafkaCluster

    return running_cluster(root, version, cluster_class=ZkKafkaCluster if version == "3.9" else KafkaCluster,
                           nodes=nodes, request_logs=True,
                           overrides={"authorizer.class.name": AUTHORIZERS[version], "super.users": "User:ANONYMOUS",
                                      **(overrides or {})}, **kw)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`ctrlaudit ARGS...` as a user runs it: its own process, from the repository."""
    return subprocess.run([sys.executable, "-m", "ctrlaudit", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def server_log_cluster(cluster) -> str:  # type: ignore[no-untyped-def]
    """The cluster id the first node's server.log states (ZooKeeper mode keeps it in ZooKeeper only)."""
    from services.requests.files import cluster_of

    found = cluster_of([cluster.nodes[1].logs_dir])
    assert found is not None
    return found


def import_history(cluster, version: str, out: Path) -> Path:  # type: ignore[no-untyped-def]
    """`ctrlaudit import` of the stopped cluster's own history (node 1's metadata log; ZooKeeper's transaction log
    in ZooKeeper mode) into `out`: the cluster's archive directory."""
    source = ["zk", str(cluster.zookeeper.data_dir), "--cluster-id", server_log_cluster(cluster)] if version == "3.9" \
        else ["kraft", str(cluster.metadata_dir(1))]
    made = cli("import", *source, "--out", str(out))
    assert made.returncode == 0, made.stderr
    (archive,) = [d for d in out.iterdir() if d.is_dir()]
    return archive


def kept(run: Cli, archive: Path, logs: list[str], from_logs: dict, *, principal: str | None = None,
         nodes: dict[str, int] | None = None) -> dict:
    """`ctrlaudit import requests` keeps the requests in the cluster's archive, after its history: it still verifies
    and checks clean, `who` without --logs answers from it as from the logs (`from_logs`: `who --logs ... --json`,
    with `principal` as --principal), and importing again adds nothing. `nodes`: the node each log directory is
    of (default: one node, 1). The archive's own answer."""
    assert run("who", str(archive)).returncode == 2  # no requests kept yet, no --logs: one line, exit 2
    made = run("import", "requests", *logs, "--out", str(archive.parent), "--json", "-")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    assert summary["cluster_id"] == archive.name and summary["nodes"] == (nodes or {logs[0]: 1}), summary
    assert summary["events"] == summary["requests"] > 0 and summary["not_read"] == [] and summary["clocks"] == []
    assert summary["continued_after_seq"] is not None
    again = run("import", "requests", *logs, "--out", str(archive.parent))
    assert again.returncode == 0 and "already holds every request read" in again.stdout, again
    assert run("verify", str(archive)).returncode == 0
    checked = run("check", str(archive), "--json", "-")
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    kept_ = run("who", str(archive), *(["--principal", principal] if principal else []), "--json", "-")
    assert kept_.returncode == 0, kept_.stderr
    got = json.loads(kept_.stdout)

    def answers(doc: dict) -> list:  # type: ignore[type-arg]
        return [(c["seq"], c["cause"], [[(r["api"], r["principal"], r["host"], r["client_id"], r["forwarded"],
                                          r["time"], Path(r["file"]).name, r["line"]) for r in g] for g in c["requests"]])
                for c in doc["changes"]]

    def refused(doc: dict) -> list:  # type: ignore[type-arg]
        return [d | {"file": Path(d["file"]).name} for d in doc["denied"]]  # the archive keeps the file's name
    assert answers(got) == answers(from_logs) and refused(got) == refused(from_logs)
    stored(run, archive, got)
    return got


def stored(run: Cli, archive: Path, from_archive: dict) -> None:  # type: ignore[type-arg]
    """A store loaded from the archive says who asked as `who` does (`from_archive`: `who ARCHIVE --json`): in its
    table for auditors (export --table attributions), with the denied attempts, and in `explain` of a partition
    change, with the node that received the request."""
    store = str(archive.parent.parent / f"{archive.name}.who.duckdb")
    loaded = run("load", str(archive), "--store", store, "--force")
    assert loaded.returncode == 0, loaded.stderr
    exported = archive.parent.parent / f"{archive.name}.who.json"
    done = run("export", "--store", store, "--table", "attributions", "--format", "json", "--out", str(exported),
               "--force")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    by_seq = {r["seq"]: r for r in rows if r["cause"] != "denied"}
    asked = {c["seq"]: c for c in from_archive["changes"] if c["cause"] == "request"}
    assert asked and set(asked) <= set(by_seq)
    for seq, c in asked.items():
        first = c["requests"][0][0] if c["requests"] else c["decisions"][-1]
        assert (by_seq[seq]["cause"], by_seq[seq]["principal"]) == ("request", first["principal"]), (by_seq[seq], c)
    assert not [r for r in by_seq.values() if r["cause"] in ("ambiguous", "unattributed")], rows
    denied = sorted((r["principal"], r["request_time"]) for r in rows if r["cause"] == "denied")
    assert sorted((d["principal"], d["time"]) for d in from_archive["denied"]) == [
        d for d in denied if d[0] in {x["principal"] for x in from_archive["denied"]}]
    partition = next(r for r in by_seq.values() if r["partition"] is not None and r["seq"] in asked)
    explained = run("explain", "--store", store, "--seq", str(partition["seq"]))
    assert explained.returncode == 0, explained.stderr
    assert f"who asked:         requested by {partition['principal']} " in explained.stdout, explained.stdout
    assert f"received by node {partition['received_by']}: {partition['api']}" in explained.stdout, explained.stdout
