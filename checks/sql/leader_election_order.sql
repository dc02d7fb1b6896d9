-- I14. A clean election picks the first eligible replica in assignment order. Every election
-- strategy of the ZooKeeper-mode controller (PartitionLeaderElectionAlgorithms: offline, reassignment,
-- preferred, controlled shutdown) and KRaft's PartitionChangeBuilder.electLeader walk the replica
-- list in order and take the first replica that is in the (new) ISR and alive: registered, unfenced
-- and not shutting down. So when the leader moves to an ISR member, no ISR member that was live
-- then may come before the new leader in the replica list.
-- Judged: PartitionChanges whose new leader was in the ISR before (unclean and ELR elections, and
-- those entering RECOVERING, are I12's and I6's). Passed-over replicas are the new ISR's members
-- ahead of the new leader, other than the previous leader (moving away from a leader that was still
-- valid is not an order question). A broker counts as live only when the history shows it registered,
-- unfenced and not in controlled shutdown as of the election: with no registration seen (a broker-log
-- import of a KRaft cluster has none) nothing is judged, since what the history does not say is not
-- invented. As-of lookups use fenced_broker_not_in_isr's ordered stream per (cluster, broker).
WITH elections AS (
  SELECT cluster_id, seq, topic, partition, a_replicas, a_isr, a_leader, b_leader,
         {position(a_replicas, a_leader)} AS leader_pos
  FROM events
  WHERE kind = 'PartitionChange' AND NOT bootstrap AND has_before AND has_after
    AND a_leader >= 0 AND a_leader <> b_leader AND {contains(b_isr, a_leader)}
    AND coalesce(election, '') NOT IN ('UNCLEAN', 'ELR')
    AND NOT (coalesce(a_recovery, '') = 'RECOVERING' AND coalesce(b_recovery, '') <> 'RECOVERING')
),
passed AS (
  SELECT cluster_id, seq, topic, partition, a_leader, a_replicas, broker, i AS pos
  FROM (
    SELECT cluster_id, seq, topic, partition, a_leader, a_replicas, a_isr, leader_pos, b_leader,
           {at(a_replicas, i)} AS broker, i
    FROM (SELECT *, {explode_index(a_replicas)} AS i FROM elections WHERE leader_pos > 1) x
  ) y
  WHERE i < leader_pos AND broker <> b_leader AND {contains(a_isr, broker)}
),
stream AS (
  SELECT cluster_id, seq, broker_id AS broker,
         CASE WHEN broker_change = 'UNREGISTERED' OR broker_fenced IS NULL THEN 'unregistered'
              WHEN broker_fenced THEN 'fenced' WHEN broker_shutdown THEN 'shutting_down' ELSE 'active' END AS state,
         1 AS is_broker, CAST(NULL AS STRING) AS topic, CAST(NULL AS INT) AS part, CAST(NULL AS INT) AS a_leader,
         {null_ints()} AS a_replicas, CAST(NULL AS INT) AS pos
  FROM events WHERE kind = 'BrokerChange'
  UNION ALL
  SELECT cluster_id, seq, broker, CAST(NULL AS STRING), 0, topic, partition, a_leader, a_replicas, pos
  FROM passed
),
versioned AS (
  SELECT *, SUM(is_broker) OVER (PARTITION BY cluster_id, broker ORDER BY seq
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS version
  FROM stream
),
as_of AS (
  SELECT *,
         FIRST_VALUE(state) OVER (PARTITION BY cluster_id, broker, version ORDER BY seq
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS broker_state,
         FIRST_VALUE(seq) OVER (PARTITION BY cluster_id, broker, version ORDER BY seq
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS state_seq
  FROM versioned
)
SELECT cluster_id, seq, MIN(state_seq) AS related_seq, 'leader_not_first_eligible' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('leader ', CAST({at(a_replicas, MIN(pos))} AS STRING), ', the first live isr member in replicas ',
              {show(a_replicas)}) AS expected,
       concat(topic, '-', CAST(part AS STRING), ' elected ', CAST(a_leader AS STRING),
              ' over live isr member(s) ', {show({collect_sorted(broker)})}) AS actual,
       CAST(COUNT(*) AS BIGINT) AS magnitude
FROM as_of
WHERE is_broker = 0 AND version > 0 AND broker_state = 'active'
GROUP BY cluster_id, seq, topic, part, a_leader, a_replicas
