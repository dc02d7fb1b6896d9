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
-- invented. Broker changes are few, elections not: each passed-over member is looked up as of its broker's
-- changes by a join on the broker with a seq range.
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
broker_versions AS (  -- each broker state with the seq of the broker's next one (few rows)
  SELECT cluster_id, seq, broker_id AS broker,
         LEAD(seq) OVER (PARTITION BY cluster_id, broker_id ORDER BY seq) AS next_seq,
         broker_change <> 'UNREGISTERED' AND NOT coalesce(broker_fenced, true)
           AND NOT coalesce(broker_shutdown, false) AS live
  FROM events WHERE kind = 'BrokerChange'
),
live_passed AS (  -- passed-over members whose state as of the election (the last change before it) is live
  SELECT /*+ BROADCAST(v) */ p.cluster_id, p.seq, p.topic, p.partition, p.a_leader, p.a_replicas, p.broker, p.pos, v.seq AS state_seq
  FROM passed p JOIN broker_versions v
    ON v.cluster_id = p.cluster_id AND v.broker = p.broker AND v.seq < p.seq
       AND (v.next_seq IS NULL OR p.seq < v.next_seq)
  WHERE v.live
)
SELECT cluster_id, seq, MIN(state_seq) AS related_seq, 'leader_not_first_eligible' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('leader ', CAST({at(a_replicas, MIN(pos))} AS STRING), ', the first live isr member in replicas ',
              {show(a_replicas)}) AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' elected ', CAST(a_leader AS STRING),
              ' over live isr member(s) ', {show({collect_sorted(broker)})}) AS actual,
       CAST(COUNT(*) AS BIGINT) AS magnitude
FROM live_passed
GROUP BY cluster_id, seq, topic, partition, a_leader, a_replicas
