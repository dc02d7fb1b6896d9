"""The dev cluster: pinned Kafka jars from Maven Central, a 3-node KRaft cluster on 127.0.0.1,
and Kafka's own tools (topics, reassign, leader election, DumpLogSegments, metadata shell)."""

from .jars import PINNED, JarResolutionError, ensure_jars, resolve_version
from .manager import ClusterError, KafkaCluster, find_free_base_port
from .zkmode import ZkKafkaCluster, ZooKeeperServer
from .tools import KafkaTools, ToolError, ToolResult, main_class

__all__ = [
    "PINNED", "ClusterError", "JarResolutionError", "KafkaCluster", "KafkaTools", "ToolError",
    "ToolResult", "ZkKafkaCluster", "ZooKeeperServer", "ensure_jars", "find_free_base_port", "main_class", "resolve_version",
]
