-- Replica placement. Judged where replicas are set (creates, bootstrap states, replica-set changes):
--  no broker twice in a replica list;
--  likewise no broker twice in the ISR, ELR, last known ELR, adding or removing list, judged where
--  that list is set (a broker counted twice in the ISR inflates it past min.insync.replicas);
--  at creation (the one moment Kafka's placer chooses), replicas on distinct racks as far as the
--  racks of the active (registered, unfenced) brokers allow: distinct racks ≥ min(RF, active racks).
--  Not judged when any replica's rack is unknown (no rack configured).
WITH judged AS (
  SELECT cluster_id, seq, topic, partition, a_replicas, has_before, bootstrap
  FROM events
  WHERE kind = 'PartitionChange' AND has_after
    AND (bootstrap OR NOT has_before OR NOT (a_replicas = b_replicas))
),
creates AS (
  SELECT cluster_id, seq, topic, partition, a_replicas
  FROM judged WHERE NOT has_before AND NOT bootstrap AND {distinct_size(a_replicas)} = {size(a_replicas)}
),
brokers AS (
  SELECT cluster_id, seq, broker_id AS broker, broker_rack AS rack,
         CASE WHEN broker_change = 'UNREGISTERED' OR broker_fenced IS NULL THEN 'unregistered'
              WHEN broker_fenced THEN 'fenced' ELSE 'active' END AS state
  FROM events WHERE kind = 'BrokerChange'
),
known AS (SELECT DISTINCT cluster_id, broker FROM brokers),
probes AS (  -- every known broker, as of every create
  SELECT c.cluster_id, c.seq, k.broker, {contains(c.a_replicas, k.broker)} AS is_replica
  FROM creates c JOIN known k ON c.cluster_id = k.cluster_id
),
stream AS (
  SELECT cluster_id, seq, broker, 1 AS is_broker, rack, state, CAST(NULL AS BOOLEAN) AS is_replica FROM brokers
  UNION ALL
  SELECT cluster_id, seq, broker, 0, CAST(NULL AS STRING), CAST(NULL AS STRING), is_replica FROM probes
),
versioned AS (
  SELECT *, SUM(is_broker) OVER (PARTITION BY cluster_id, broker ORDER BY seq
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS version
  FROM stream
),
as_of AS (
  SELECT cluster_id, seq, broker, is_broker, is_replica, version,
         FIRST_VALUE(rack) OVER (PARTITION BY cluster_id, broker, version ORDER BY seq
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS rack_asof,
         FIRST_VALUE(state) OVER (PARTITION BY cluster_id, broker, version ORDER BY seq
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS state_asof
  FROM versioned
),
per_create AS (
  SELECT cluster_id, seq,
         COUNT(DISTINCT CASE WHEN state_asof = 'active' THEN rack_asof END) AS active_racks,
         COUNT(DISTINCT CASE WHEN is_replica THEN rack_asof END) AS replica_racks,
         SUM(CASE WHEN is_replica AND rack_asof IS NOT NULL THEN 1 ELSE 0 END) AS replicas_with_rack
  FROM as_of WHERE is_broker = 0 AND version > 0
  GROUP BY cluster_id, seq
),
member_lists AS (
  SELECT cluster_id, seq, topic, partition, 'isr' AS list, a_isr AS members, b_isr AS was, has_before, bootstrap
  FROM events WHERE kind = 'PartitionChange' AND has_after
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'elr', a_elr, b_elr, has_before, bootstrap
  FROM events WHERE kind = 'PartitionChange' AND has_after
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'last_known_elr', a_last_known_elr, b_last_known_elr, has_before, bootstrap
  FROM events WHERE kind = 'PartitionChange' AND has_after
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'adding', a_adding, b_adding, has_before, bootstrap
  FROM events WHERE kind = 'PartitionChange' AND has_after
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'removing', a_removing, b_removing, has_before, bootstrap
  FROM events WHERE kind = 'PartitionChange' AND has_after
),
member_dups AS (
  SELECT * FROM member_lists
  WHERE {distinct_size(members)} < {size(members)} AND (bootstrap OR NOT has_before OR NOT (members = was))
),
rack_bad AS (
  SELECT c.cluster_id, c.seq, c.topic, c.partition, c.a_replicas, p.active_racks, p.replica_racks,
         CASE WHEN {size(c.a_replicas)} < p.active_racks THEN {size(c.a_replicas)} ELSE p.active_racks END AS needed
  FROM creates c JOIN per_create p ON c.cluster_id = p.cluster_id AND c.seq = p.seq
  WHERE p.replicas_with_rack = {size(c.a_replicas)}
)
SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, 'duplicate_replica' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       'each broker at most once in replicas' AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' replicas ', {show(a_replicas)}) AS actual,
       CAST({size(a_replicas)} - {distinct_size(a_replicas)} AS BIGINT) AS magnitude
FROM judged WHERE {distinct_size(a_replicas)} < {size(a_replicas)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'replicas_share_rack', 'violated', CAST(NULL AS STRING),
       concat('replicas on ', CAST(needed AS STRING), ' distinct racks (', CAST(active_racks AS STRING),
              ' racks with active brokers)'),
       concat(topic, '-', CAST(partition AS STRING), ' replicas ', {show(a_replicas)}, ' on ',
              CAST(replica_racks AS STRING), ' rack(s)'),
       CAST(needed - replica_racks AS BIGINT)
FROM rack_bad WHERE replica_racks < needed
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), concat('duplicate_in_', list), 'violated', CAST(NULL AS STRING),
       concat('each broker at most once in ', list),
       concat(topic, '-', CAST(partition AS STRING), ' ', list, ' ', {show(members)}),
       CAST({size(members)} - {distinct_size(members)} AS BIGINT)
FROM member_dups
