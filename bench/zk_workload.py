"""A real ZooKeeper transaction log for bench/decode.py --zk-dir: a 3-broker ZooKeeper-mode Kafka 3.9.2
cluster (devtools.cluster.ZkKafkaCluster) driven until ZooKeeper has logged about --txns transactions.

    python bench/zk_workload.py --out DIR [--txns 20000]

Topics of 50 partitions (replication 3) are created in batches through the AdminClient (one LeaderAndIsr
znode create per partition, each a multi guarded by /controller_epoch), then brokers are killed with -9
and restarted in turn (the controller moves every leader off the dead broker and shrinks every ISR, and
grows them again: a setData per partition each time) until the count is reached. The logs
(``version-2/log.*``) are copied to DIR/version-2 and the cluster is stopped. Not a test.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devtools.cluster import ZkKafkaCluster, find_free_base_port  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--txns", type=int, default=20000)
    a = ap.parse_args(argv)
    from confluent_kafka.admin import AdminClient, NewTopic
    work = a.out / "cluster"
    c = ZkKafkaCluster(work, "3.9", base_port=find_free_base_port(), snap_count=20000)
    try:
        c.up()
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        t = 0
        while c.zookeeper.last_zxid() < a.txns * 0.6:
            fs = admin.create_topics([NewTopic(f"bench-{t + i}", 50, 3) for i in range(10)], operation_timeout=60)
            for f in fs.values():
                f.result()
            t += 10
            print(f"{t} topics, zxid {c.zookeeper.last_zxid():#x}", flush=True)
        victim = 1
        while c.zookeeper.last_zxid() < a.txns:
            c.kill_node(victim)
            time.sleep(8)  # the session expires, the controller moves leaders and shrinks ISRs
            c.start_node(victim)
            c.wait_ready([victim])
            time.sleep(5)  # the ISRs grow again
            print(f"broker {victim} killed and back, zxid {c.zookeeper.last_zxid():#x}", flush=True)
            victim = victim % 3 + 1
    finally:
        c.down()
    dest = a.out / "version-2"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(work / "zookeeper" / "data" / "version-2", dest)
    shutil.rmtree(work, ignore_errors=True)
    print(f"logs in {dest}: {sorted(p.name for p in dest.iterdir())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
