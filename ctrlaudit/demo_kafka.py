"""`make demo` on a real cluster: a 3-node KRaft Kafka from Maven jars, a short incident, and the
forensics ctrlaudit gives afterwards from the cluster's own metadata log.

start Kafka -> topics -> mark A -> kill -9 a broker (fencing, ISR shrink, leader moves) ->
restart it -> preferred election -> move a replica -> kill the active controller (new epoch) ->
copy a node's __cluster_metadata-0 -> ctrlaudit import kraft -> load -> state as of mark A and
now, diff, timeline, explain, check. Everything lands in demo-out/; the cluster is torn down.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from ctrlaudit.demo import OUT, step

TOPIC = "orders"


def _wait(pred, timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.5)
    raise SystemExit(f"demo: timed out waiting for {what}")


def main() -> None:
    from services.cluster import observe
    from services.cluster.testing import running_cluster

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    print("starting a 3-node KRaft cluster (Kafka 4.x jars from Maven Central, cached in .kafka-cache/)...",
          flush=True)
    with running_cluster(OUT / "cluster", "4.x") as c:
        bs = lambda: observe.running_bootstrap(c)  # noqa: E731
        c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", TOPIC, "--partitions", "6",
               "--replication-factor", "3", "--config", "min.insync.replicas=2")
        mark_a = observe.stable_mark(c, "A", until=lambda d: len(d.partitions) == 6)
        print(f"mark A: {TOPIC} created, metadata offset {mark_a.offset}")

        controller = c.active_controller()
        victim = next(i for i in c.nodes if i != controller)
        print(f"kill -9 broker {victim}; the controller fences it and shrinks the ISRs...", flush=True)
        c.kill_node(victim)
        _wait(lambda: all(victim not in p.isr for p in observe.describe(c, TOPIC).partitions.values()),
              60, f"broker {victim} to leave every ISR")
        c.start_node(victim)
        c.wait_ready([victim])
        _wait(lambda: all(len(p.isr) == 3 for p in observe.describe(c, TOPIC).partitions.values()),
              90, "the ISRs to expand again")
        c.tool("leader-election", "--bootstrap-server", bs(), "--election-type", "PREFERRED",
               "--all-topic-partitions", check=False)
        replicas = observe.describe(c, TOPIC).partitions[(TOPIC, 0)].replicas
        target = [r for r in replicas if r != replicas[-1]]
        plan = OUT / "reassign.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": 0, "replicas": target}]}))
        print(f"reassign {TOPIC}-0 from {list(replicas)} to {target}", flush=True)
        c.tool("reassign", "--bootstrap-server", bs(), "--reassignment-json-file", str(plan), "--execute")
        _wait(lambda: "complete" in c.tool("reassign", "--bootstrap-server", bs(), "--reassignment-json-file",
                                           str(plan), "--verify", check=False).stdout, 60, "the reassignment")
        controller = c.active_controller()
        print(f"kill -9 the active controller (node {controller}): a new controller epoch", flush=True)
        c.kill_node(controller)
        c.wait_for_controller(exclude=controller)
        c.start_node(controller)
        c.wait_ready([controller])
        observe.stable_mark(c, "end")
        copy = OUT / "metadata-copy"
        node = c.active_controller()
        shutil.copytree(c.metadata_dir(node), copy / "__cluster_metadata-0")
        shutil.copy(c.nodes[node].data_dir / "meta.properties", copy / "meta.properties")
    print("cluster stopped; everything below reads only the copied metadata log\n")

    store, archive = str(OUT / "demo.duckdb"), str(OUT / "archive")
    step("decode the copied metadata log into an archive", "import", "kraft", str(copy / "__cluster_metadata-0"),
         "--out", archive)
    step("load it", "load", archive, "--store", store)
    step("the state at mark A, as kafka-topics --describe printed it then", "state", "--store", store,
         "--offset", str(mark_a.offset), "--topic", TOPIC)
    step("the state at the end", "state", "--store", store, "--topic", TOPIC)
    step("everything that changed since mark A", "diff", "--store", store, "--from-offset", str(mark_a.offset))
    step(f"the history of {TOPIC}-0", "timeline", "--store", store, "--topic", TOPIC, "--partition", "0")
    step(f"why {TOPIC}-0's leader last moved", "explain", "--store", store, "--topic", TOPIC, "--partition", "0",
         "--last-leader-change")
    step("the invariant catalog over the whole history", "check", store, check=False)
    print(f"\nEverything is in {OUT}/ (the metadata copy, the archive, the DuckDB store).")


if __name__ == "__main__":
    main()
