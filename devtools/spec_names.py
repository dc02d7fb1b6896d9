"""Writes checks/spec_names.json: the names each specification and Kafka source file cited by the catalog's
anchors defines, read from git checkouts at pinned commits, so that tests/checks/test_anchors.py can hold every
citation to a name that exists (a misspelt or invented name fails there, not in a reader's hands).

    python devtools/spec_names.py OWNER/NAME=GIT_DIR ... > checks/spec_names.json

Each GIT_DIR is a clone (bare or not) of github.com/OWNER/NAME; the commit read is the one pinned in SOURCES
below (fetch it first if the clone lacks it). Only names are kept, never the files' text: TLA+ operator
definitions (`Name ==` or `Name(args) ==` at the start of a line), Java methods, Scala `def`s.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

# repository -> (commit, files whose names the anchors may cite)
SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "Vanlightly/kafka-tlaplus": ("823615e8a0962d0160c11d9affb2576c56b7c054", (
        "kafka_data_replication/kraft/v3.5/v3_5_properties.tla",
        "kafka_data_replication/kraft/v3.5/kafka_replication_v3_5.tla",
        "kafka_data_replication/kraft/v3.5/v3_5_functions.tla",
        "kafka_data_replication/kraft/kip-966/kip_966_properties.tla",
        "kafka_data_replication/kraft/kip-966/kafka_replication_kip_966.tla",
        "kafka_data_replication/kraft/kip-966/kip_966_functions.tla",
        "kraft/kip_996/kraft_kip_996_properties.tla",
        "kraft/kip_853/kraft_kip_853_properties.tla",
    )),
    "hachikuji/kafka-specification": ("d68782b5772f93e2ef01f8a9ff68bbd9370f6b7f", (
        "KafkaReplication.tla", "AsyncIsr.tla", "Kip320.tla", "IdSequence.tla",
    )),
    "ocadaruma/kafka-spec": ("d0d48b464bba762731bb4d97bf6103cf62562e88", (
        "UncleanLeaderElectionSafety.tla",
    )),
    "apache/kafka": ("1eb7644349cb07139d6a3c1ad1986979647cac99", (
        "metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java",
        "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java",
        "metadata/src/main/java/org/apache/kafka/controller/PartitionReassignmentReplicas.java",
        "metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java",
        "metadata/src/main/java/org/apache/kafka/controller/QuorumController.java",
        "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java",
        "metadata/src/main/java/org/apache/kafka/metadata/placement/StripedReplicaPlacer.java",
        "metadata/src/main/java/org/apache/kafka/image/MetadataDelta.java",
        "server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java",
        "raft/src/main/java/org/apache/kafka/raft/QuorumState.java",
        "core/src/main/scala/kafka/controller/KafkaController.scala",
        "core/src/main/scala/kafka/controller/Election.scala",
        "core/src/main/scala/kafka/controller/PartitionStateMachine.scala",
        "core/src/main/scala/kafka/controller/ReplicaStateMachine.scala",
        "core/src/main/scala/kafka/zk/KafkaZkClient.scala",
        "core/src/main/scala/kafka/cluster/Partition.scala",
    )),
}

_TLA = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==", re.M)
_JAVA = re.compile(r"^\s+(?:(?:public|private|protected|static|final|synchronized|abstract|default)\s+)*"
                   r"(?:<[^>]*>\s+)?[\w<>\[\],.?]+(?:<[^()]*>)?\s+([a-zA-Z_]\w*)\s*\(", re.M)
_SCALA = re.compile(r"\bdef\s+([a-zA-Z_]\w*)")


def names(path: str, text: str) -> list[str]:
    pattern = _TLA if path.endswith(".tla") else _JAVA if path.endswith(".java") else _SCALA
    return sorted(set(pattern.findall(text)) - {"if", "for", "while", "switch", "return", "new", "catch"})


def main(argv: list[str]) -> int:
    dirs = dict(a.split("=", 1) for a in argv)
    out: dict[str, dict[str, object]] = {}
    for repo, (commit, files) in SOURCES.items():
        if repo not in dirs:
            print(f"spec_names: no checkout given for {repo}", file=sys.stderr)
            return 2
        out[repo] = {"commit": commit, "files": {
            f: names(f, subprocess.run(["git", "-C", dirs[repo], "show", f"{commit}:{f}"], check=True,
                                       capture_output=True, text=True).stdout) for f in files}}
    json.dump({"generated_by": "devtools/spec_names.py", "sources": out}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
