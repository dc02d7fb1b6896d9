-- L4. Bounded liveness (severity warning): an assigned replica's sampled log end offset reaches an earlier
-- sampled high watermark within the deadline (replication not stuck). One obligation per replica of a
-- partition (by cluster, topic, partition and broker), judged at the partition's samples with a HW: owed
-- where the replica's sampled LEO is below the HW of the partition's sample before (what was committed then,
-- which an assigned replica must fetch); met at the first sample whose LEO has reached the HW of the sample
-- before it, or that no longer names the replica (not assigned), or at the partition's delete (after which the
-- HW starts again). A replica that did not answer (LEO -1) is no evidence: that sample neither opens nor
-- meets its obligation. Met later than the deadline ({deadline_ms()} ms in this query): violated, at the
-- sample that met it, related_seq the one that opened it, magnitude the milliseconds it took; still owed at
-- the end of the history: pending, at the sample that opened it, magnitude the milliseconds to the cluster's
-- last event.
WITH samples AS (
  SELECT cluster_id, seq, topic, partition, event_time_ms, s_hw AS hw, s_replicas, s_leos, false AS deleted
  FROM events
  WHERE kind = 'OffsetSample' AND s_hw >= 0
  UNION ALL
  SELECT cluster_id, seq, topic, partition, event_time_ms, CAST(NULL AS BIGINT), {null_ints()}, {null_longs()}, true
  FROM events
  WHERE kind = 'PartitionChange' AND NOT has_after
),
steps AS (
  SELECT *, LAG(hw) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq) AS prev_hw FROM samples
),
replicas AS (  -- every replica the partition's samples name
  SELECT DISTINCT cluster_id, topic, partition, replica
  FROM (SELECT cluster_id, topic, partition, {explode(s_replicas)} AS replica FROM samples WHERE NOT deleted) x
),
placed AS (
  SELECT /*+ BROADCAST(r) */ s.cluster_id, s.seq, s.topic, s.partition, s.event_time_ms, s.prev_hw, s.deleted, s.s_leos,
         r.replica,
         CASE WHEN s.deleted THEN 0 ELSE {position(s.s_replicas, r.replica)} END AS pos
  FROM steps s
  JOIN replicas r ON r.cluster_id = s.cluster_id AND r.topic = s.topic AND r.partition = s.partition
),
judged AS (  -- owed (TRUE), met (FALSE) or no evidence (NULL) at each step, per replica
  SELECT cluster_id, seq, topic, partition, event_time_ms, replica, prev_hw, leo,
         CASE WHEN deleted OR pos = 0 THEN false
              WHEN leo IS NULL OR leo < 0 THEN CAST(NULL AS BOOLEAN)
              ELSE coalesce(leo < prev_hw, false) END AS owed
  FROM (SELECT *, CASE WHEN pos > 0 THEN {at(s_leos, pos)} END AS leo FROM placed) p
),
edges AS (
  SELECT * FROM (
    SELECT *, LAG(owed) OVER (PARTITION BY cluster_id, topic, partition, replica ORDER BY seq) AS was_owed
    FROM judged WHERE owed IS NOT NULL
  ) s
  WHERE owed <> coalesce(was_owed, false)
),
runs AS (
  SELECT cluster_id, topic, partition, replica, owed, prev_hw, leo, seq AS open_seq, event_time_ms AS open_ms,
         LEAD(seq) OVER (PARTITION BY cluster_id, topic, partition, replica ORDER BY seq) AS met_seq,
         LEAD(event_time_ms) OVER (PARTITION BY cluster_id, topic, partition, replica ORDER BY seq) AS met_ms
  FROM edges
),
{include(overdue)}
SELECT cluster_id, seq, related_seq, 'replica_behind_hw' AS rule, status, CAST(NULL AS STRING) AS allowance,
       concat('LEO reaches the HW sampled before within ', CAST({deadline_ms()} AS STRING), ' ms') AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' replica ', CAST(replica AS STRING), ': LEO ',
              CAST(leo AS STRING), ' below HW ', CAST(prev_hw AS STRING),
              CASE WHEN status = 'violated' THEN concat(' for ', CAST(magnitude AS STRING), ' ms (from the related seq)')
                   ELSE ' at the end of the history' END) AS actual,
       magnitude
FROM overdue
