"""Kafka jars from Maven Central, resolved once into ``.kafka-cache/<version>/lib``.

The pom in ``kafka/pom.xml`` does the resolving; this module only decides whether it needs to
run (a ``.complete`` marker is written after a successful resolution, so a half-copied cache from
an interrupted run is redone rather than trusted).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
POM = REPO_ROOT / "kafka" / "pom.xml"
# Hadoop's in-process HDFS for the tests (devtools.cluster.hdfs), at pyspark's own Hadoop version
HDFS_POM = REPO_ROOT / "kafka" / "hdfs-pom.xml"
HADOOP_VERSION = "3.5.0"

# The versions the project tests against. "4.x" is the newest 4.x whose tools and shell jars are
# all on Maven Central; 3.9 is the last line with ZooKeeper mode.
# CTRLAUDIT_KAFKA_4 runs everything "4.x" on another 4.x release instead (the real-cluster tests against
# 4.4.0: `CTRLAUDIT_KAFKA_4=4.4.0 make test`), CTRLAUDIT_KAFKA_3 everything "3.9" on an older 3.x release
# (ZooKeeper mode as Kafka 3.0-3.8 ran it, each with its own bundled ZooKeeper); the generated tables
# (kafka/gen_*.py) keep DEFAULT_PINS.
DEFAULT_PINS = {"4": "4.3.1", "3.9": "3.9.2"}
PINNED = {"4": os.environ.get("CTRLAUDIT_KAFKA_4") or DEFAULT_PINS["4"],
          "3.9": os.environ.get("CTRLAUDIT_KAFKA_3") or DEFAULT_PINS["3.9"]}
ALIASES = {"4.x": "4", "4": "4", "latest": "4", "3.9": "3.9", "3.9.x": "3.9", "3": "3.9"}


class JarResolutionError(RuntimeError):
    """Maven could not provide the jars of a Kafka version."""


def resolve_version(version: str) -> str:
    """Map ``4.x``/``3.9`` (or a full ``x.y.z``) to a pinned full version."""
    if version in ALIASES:
        return PINNED[ALIASES[version]]
    return version


def cache_root() -> Path:
    return Path(os.environ.get("CTRLAUDIT_KAFKA_CACHE", REPO_ROOT / ".kafka-cache"))


def profile_for(version: str) -> str:
    # before 4.0 Kafka logs through log4j 1.x (reload4j from 3.1 on; earlier releases bring log4j itself)
    return "kafka-4" if int(version.split(".")[0]) >= 4 else "kafka-3.9"


def ensure_jars(version: str = "4.x", *, quiet: bool = True) -> Path:
    """Return the lib directory of ``version``, running Maven only if it is not complete yet."""
    full = resolve_version(version)
    lib = cache_root() / full / "lib"
    marker = lib / ".complete"
    if marker.exists():
        return lib
    args = [str(POM), "-P", profile_for(full), f"-Dkafka.version={full}"]
    try:
        _copy_dependencies(args, lib, "kafka_2.13-*.jar", f"Kafka {full}", quiet)
    except JarResolutionError as e:
        if f"kafka-shell:jar:{full}" not in str(e):
            raise
        # no metadata shell of this release on Maven Central: the rest of it (KafkaTools.has_shell is False)
        _copy_dependencies([*args, "-Dno.shell=true"], lib, "kafka_2.13-*.jar", f"Kafka {full} (no kafka-shell)", quiet)
    return lib


def ensure_hdfs_jars(*, quiet: bool = True) -> Path:
    """The lib directory of Hadoop's MiniDFSCluster (kafka/hdfs-pom.xml), resolved as the Kafka jars are."""
    lib = cache_root() / f"hadoop-{HADOOP_VERSION}" / "lib"
    if not (lib / ".complete").exists():
        _copy_dependencies([str(HDFS_POM), f"-Dhadoop.version={HADOOP_VERSION}"], lib,
                           "hadoop-client-minicluster-*.jar", f"Hadoop {HADOOP_VERSION}", quiet)
    return lib


def _copy_dependencies(pom_args: list[str], lib: Path, probe: str, what: str, quiet: bool) -> None:
    """`mvn dependency:copy-dependencies` of a pom into `lib`, then the `.complete` marker."""
    cmd = ["mvn", "-B", "-f", *pom_args, f"-Dkafka.cache={cache_root()}", "dependency:copy-dependencies"]
    if quiet:
        cmd.insert(1, "-q")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        # the line naming the missing artifact, else the end of Maven's output
        why = [line for line in lines if "Could not" in line][:2] or lines[-5:]
        raise JarResolutionError(f"mvn could not resolve {what}: " + " | ".join(why))
    if not any(lib.glob(probe)):
        raise JarResolutionError(f"mvn succeeded but {lib} has no {probe}")
    (lib / ".complete").write_text(what + "\n")


def classpath(version: str = "4.x") -> str:
    return str(ensure_jars(version) / "*")
