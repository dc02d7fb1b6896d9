"""The interval tables: each state valid from seq `from_seq` to `to_seq` (exclusive; NULL = still
current), built by DuckDB window functions (LEAD over each key ordered by seq), not by a Python fold.

State as of seq S is then one range query: `from_seq <= S AND (to_seq IS NULL OR to_seq > S)`.
Rebuilds are per key set: the keys the new events touch are deleted and recomputed from all their
events, so a load of newer files (or, out of order, of older ones) extends intervals correctly.
"""
from __future__ import annotations

import duckdb

STATE = "replicas, isr, adding, removing, elr, last_known_elr, leader, leader_epoch, partition_epoch, recovery"

DDL = """
CREATE TABLE IF NOT EXISTS partition_intervals (
    cluster_id VARCHAR, topic_id VARCHAR, topic VARCHAR, "partition" INTEGER,
    from_seq BIGINT, to_seq BIGINT, from_time_ms BIGINT, to_time_ms BIGINT, from_offset BIGINT,
    event_id VARCHAR, controller_id INTEGER, controller_epoch INTEGER, changes VARCHAR[], election VARCHAR,
    replicas INTEGER[], isr INTEGER[], adding INTEGER[], removing INTEGER[], elr INTEGER[],
    last_known_elr INTEGER[], leader INTEGER, leader_epoch INTEGER, partition_epoch INTEGER, recovery VARCHAR
);
CREATE TABLE IF NOT EXISTS topic_intervals (
    cluster_id VARCHAR, topic_id VARCHAR, topic VARCHAR, from_seq BIGINT, to_seq BIGINT
);
CREATE TABLE IF NOT EXISTS broker_intervals (
    cluster_id VARCHAR, broker_id INTEGER, from_seq BIGINT, to_seq BIGINT, from_time_ms BIGINT,
    broker_change VARCHAR, epoch BIGINT, fenced BOOLEAN, in_controlled_shutdown BOOLEAN, rack VARCHAR
);
CREATE TABLE IF NOT EXISTS controller_intervals (
    cluster_id VARCHAR, from_seq BIGINT, to_seq BIGINT, from_time_ms BIGINT,
    leader_id INTEGER, epoch INTEGER, voters INTEGER[]
);
CREATE TABLE IF NOT EXISTS config_intervals (
    cluster_id VARCHAR, resource_type VARCHAR, resource_name VARCHAR, name VARCHAR,
    from_seq BIGINT, to_seq BIGINT, value VARCHAR
);
CREATE TABLE IF NOT EXISTS feature_intervals (
    cluster_id VARCHAR, feature VARCHAR, from_seq BIGINT, to_seq BIGINT, level INTEGER
);
"""

# Topic deletions end the intervals of the topic's partitions and of its config overrides, as
# Kafka's image drops both on RemoveTopicRecord, even when no per-partition delete was recorded.
_DELETES = """
topic_deletes AS (
    SELECT cluster_id, topic_id, topic, seq AS del_seq, event_time_ms AS del_time
    FROM events WHERE kind = 'TopicChange' AND topic_change = 'DELETED'
)"""


def rebuild_partitions(con: duckdb.DuckDBPyConnection, touched: str | None) -> None:
    """Recompute partition intervals of the keys in table `touched` (cluster_id, topic_id,
    partition), or of everything when `touched` is None."""
    keys = "" if touched is None else (
        f"SEMI JOIN {touched} k ON e.cluster_id = k.cluster_id AND e.topic_id = k.topic_id "
        f"AND e.\"partition\" = k.\"partition\"")
    if touched is not None:
        con.execute(f"""DELETE FROM partition_intervals p USING {touched} k WHERE p.cluster_id = k.cluster_id
                        AND p.topic_id = k.topic_id AND p."partition" = k."partition" """)
    else:
        con.execute("DELETE FROM partition_intervals")
    # The window runs over the narrow key columns only and the wide state is joined back by seq:
    # measured at 10M events, 22 instead of 40 CPU-s. No ORDER BY on the insert: sorting the wide
    # rows took 7.8 GB of RSS past DuckDB's memory limit, and queries order their own results.
    con.execute(f"""
        INSERT INTO partition_intervals
        WITH changes AS (
            SELECT e.cluster_id, e.topic_id, e.seq, e.has_after,
                   LEAD(e.seq) OVER w AS next_seq, LEAD(e.event_time_ms) OVER w AS next_time
            FROM events e {keys}
            WHERE e.kind = 'PartitionChange'
            WINDOW w AS (PARTITION BY e.cluster_id, e.topic_id, e."partition" ORDER BY e.seq)
        ), {_DELETES.strip()},
        first_delete AS (
            SELECT c.cluster_id, c.seq, min(d.del_seq) AS del_seq, arg_min(d.del_time, d.del_seq) AS del_time
            FROM changes c JOIN topic_deletes d
              ON d.cluster_id = c.cluster_id AND d.topic_id = c.topic_id AND d.del_seq > c.seq
            GROUP BY c.cluster_id, c.seq
        ),
        ends AS (
            SELECT c.cluster_id, c.seq,
                   CASE WHEN f.del_seq IS NOT NULL AND (c.next_seq IS NULL OR f.del_seq < c.next_seq)
                        THEN f.del_seq ELSE c.next_seq END AS to_seq,
                   CASE WHEN f.del_seq IS NOT NULL AND (c.next_seq IS NULL OR f.del_seq < c.next_seq)
                        THEN f.del_time ELSE c.next_time END AS to_time
            FROM changes c LEFT JOIN first_delete f ON f.cluster_id = c.cluster_id AND f.seq = c.seq
            WHERE c.has_after
        )
        SELECT e.cluster_id, e.topic_id, e.topic, e."partition", e.seq, n.to_seq, e.event_time_ms, n.to_time,
               e.source_offset, e.event_id, e.controller_id, e.controller_epoch, e.changes, e.election,
               e.a_replicas, e.a_isr, e.a_adding, e.a_removing, e.a_elr, e.a_last_known_elr, e.a_leader,
               e.a_leader_epoch, e.a_partition_epoch, e.a_recovery
        FROM events e JOIN ends n ON e.cluster_id = n.cluster_id AND e.seq = n.seq
        WHERE e.kind = 'PartitionChange'
    """)


def rebuild_small(con: duckdb.DuckDBPyConnection, cluster_id: str) -> None:
    """Recompute the topic, broker, controller, config and feature intervals of one cluster.
    These kinds are rare next to partition changes, so a full rebuild is cheap."""
    for table in ("topic_intervals", "broker_intervals", "controller_intervals", "config_intervals",
                  "feature_intervals"):
        con.execute(f"DELETE FROM {table} WHERE cluster_id = ?", [cluster_id])
    con.execute("""
        INSERT INTO topic_intervals
        WITH t AS (SELECT topic_id, topic, topic_change, seq,
                          LEAD(seq) OVER (PARTITION BY topic_id ORDER BY seq) AS next_seq
                   FROM events WHERE cluster_id = $c AND kind = 'TopicChange')
        SELECT $c, topic_id, topic, seq, next_seq FROM t WHERE topic_change = 'CREATED'
    """, {"c": cluster_id})
    con.execute("""
        INSERT INTO broker_intervals
        WITH b AS (SELECT *, LEAD(seq) OVER (PARTITION BY broker_id ORDER BY seq) AS next_seq
                   FROM events WHERE cluster_id = $c AND kind = 'BrokerChange')
        SELECT $c, broker_id, seq, next_seq, event_time_ms, broker_change, broker_epoch, broker_fenced,
               broker_shutdown, broker_rack
        FROM b WHERE broker_fenced IS NOT NULL AND broker_change <> 'UNREGISTERED'
    """, {"c": cluster_id})
    con.execute("""
        INSERT INTO controller_intervals
        SELECT $c, seq, LEAD(seq) OVER (ORDER BY seq), event_time_ms, cc_leader, cc_epoch, cc_voters
        FROM events WHERE cluster_id = $c AND kind = 'ControllerChange'
    """, {"c": cluster_id})
    con.execute(f"""
        INSERT INTO config_intervals
        WITH c AS (SELECT config_type, config_resource, config_name, config_value, seq,
                          LEAD(seq) OVER (PARTITION BY config_type, config_resource, config_name ORDER BY seq) AS next_seq
                   FROM events WHERE cluster_id = $c AND kind = 'ConfigChange'),
        {_DELETES.strip()},
        capped AS (
            SELECT c.*, (SELECT min(d.del_seq) FROM topic_deletes d WHERE d.cluster_id = $c
                         AND c.config_type = 'TOPIC' AND d.topic = c.config_resource AND d.del_seq > c.seq) AS del_seq
            FROM c)
        SELECT $c, config_type, config_resource, config_name, seq,
               CASE WHEN del_seq IS NOT NULL AND (next_seq IS NULL OR del_seq < next_seq) THEN del_seq ELSE next_seq END,
               config_value
        FROM capped WHERE config_value IS NOT NULL
    """, {"c": cluster_id})
    con.execute("""
        INSERT INTO feature_intervals
        WITH f AS (SELECT feature, feature_level, seq, LEAD(seq) OVER (PARTITION BY feature ORDER BY seq) AS next_seq
                   FROM events WHERE cluster_id = $c AND kind = 'FeatureLevelChange')
        SELECT $c, feature, seq, next_seq, feature_level FROM f WHERE feature_level <> 0
    """, {"c": cluster_id})
