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
broker_versions AS (  -- each broker state with the seq of the broker's next one (few rows)
  SELECT cluster_id, seq, broker, rack, state,
         LEAD(seq) OVER (PARTITION BY cluster_id, broker ORDER BY seq) AS next_seq
  FROM brokers
),
-- The registry as of a create is the registry as of the last broker change before it: creates are
-- numbered by the broker changes before them, and each such registry built once (few broker changes).
numbered AS (
  SELECT cluster_id, seq, is_broker,
         SUM(is_broker) OVER (PARTITION BY cluster_id ORDER BY seq
                              ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS registry
  FROM (SELECT cluster_id, seq, 1 AS is_broker FROM brokers
        UNION ALL SELECT cluster_id, seq, 0 FROM creates) u
),
registries AS (  -- every broker registered by the registry's broker change, as of it
  SELECT /*+ BROADCAST(v) */ r.cluster_id, r.registry, v.broker, v.rack, v.state
  FROM numbered r JOIN broker_versions v
    ON v.cluster_id = r.cluster_id AND v.seq <= r.seq AND (v.next_seq IS NULL OR r.seq < v.next_seq)
  WHERE r.is_broker = 1
),
active_racks AS (
  SELECT cluster_id, registry, COUNT(DISTINCT CASE WHEN state = 'active' THEN rack END) AS active_racks
  FROM registries GROUP BY cluster_id, registry
),
replica_racks AS (
  SELECT /*+ BROADCAST(g) */ x.cluster_id, x.seq, COUNT(DISTINCT g.rack) AS replica_racks,
         SUM(CASE WHEN g.rack IS NOT NULL THEN 1 ELSE 0 END) AS replicas_with_rack
  FROM (SELECT c.cluster_id, c.seq, n.registry, {explode(c.a_replicas)} AS broker
        FROM creates c JOIN numbered n ON n.cluster_id = c.cluster_id AND n.seq = c.seq AND n.is_broker = 0) x
  JOIN registries g ON g.cluster_id = x.cluster_id AND g.registry = x.registry AND g.broker = x.broker
  GROUP BY x.cluster_id, x.seq
),
per_create AS (  -- creates with some broker registered before them
  SELECT /*+ BROADCAST(a) */ n.cluster_id, n.seq, a.active_racks, coalesce(r.replica_racks, 0) AS replica_racks,
         coalesce(r.replicas_with_rack, 0) AS replicas_with_rack
  FROM numbered n JOIN active_racks a ON a.cluster_id = n.cluster_id AND a.registry = n.registry
       LEFT JOIN replica_racks r ON r.cluster_id = n.cluster_id AND r.seq = n.seq
  WHERE n.is_broker = 0
),
lists_dup AS (  -- the changes with a duplicate in some member list: one scan of the events, not one per list
  SELECT cluster_id, seq, topic, partition, has_before, bootstrap, a_isr, b_isr, a_elr, b_elr,
         a_last_known_elr, b_last_known_elr, a_adding, b_adding, a_removing, b_removing
  FROM events WHERE kind = 'PartitionChange' AND has_after
    -- a list of one element holds no duplicate: most ELR, adding and removing lists are empty
    AND (({size(a_isr)} > 1 AND {distinct_size(a_isr)} < {size(a_isr)})
         OR ({size(a_elr)} > 1 AND {distinct_size(a_elr)} < {size(a_elr)})
         OR ({size(a_last_known_elr)} > 1 AND {distinct_size(a_last_known_elr)} < {size(a_last_known_elr)})
         OR ({size(a_adding)} > 1 AND {distinct_size(a_adding)} < {size(a_adding)})
         OR ({size(a_removing)} > 1 AND {distinct_size(a_removing)} < {size(a_removing)}))
),
member_lists AS (
  SELECT cluster_id, seq, topic, partition, 'isr' AS list, a_isr AS members, b_isr AS was, has_before, bootstrap
  FROM lists_dup
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'elr', a_elr, b_elr, has_before, bootstrap FROM lists_dup
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'last_known_elr', a_last_known_elr, b_last_known_elr, has_before, bootstrap
  FROM lists_dup
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'adding', a_adding, b_adding, has_before, bootstrap FROM lists_dup
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 'removing', a_removing, b_removing, has_before, bootstrap FROM lists_dup
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
