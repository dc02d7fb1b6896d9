-- I8 (ValidHighWatermark). From OffsetSample events: the leader's HW ≤ the LEO of every ISR member,
-- with the ISR of the partition's latest state before the sample. A replica that did not answer
-- (LEO -1), or that the sample does not list, is not evidence. The sampler reads HW first and
-- LEOs after, so a healthy partition cannot look violated.
-- Cost: one window pass per partition in seq order, over keys only, gives each sample the seq of the
-- state it was taken in (a running maximum, seq rising); the sample and that state's ISR are fetched by
-- key. The window carries the cluster's number (fragments/cluster_numbers.sql), not its id (a string:
-- as key or as payload it doubled the window's time at 10M events).
WITH clusters AS ({include(cluster_numbers)}),
timeline AS (  -- (not `stream`: Spark 4 reads `FROM stream s` as a streaming read of table s)
  SELECT cluster_id, seq, topic, partition, 1 AS is_state FROM events WHERE kind = 'PartitionChange'
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 0 FROM events WHERE kind = 'OffsetSample' AND s_hw >= 0
),
as_of AS (  -- the samples, each with its state's seq
  SELECT c.cluster_id, a.seq, a.state_seq
  FROM (SELECT c.cluster_no, s.seq, s.is_state,
               MAX(CASE WHEN s.is_state = 1 THEN s.seq END)
                 OVER (PARTITION BY c.cluster_no, s.topic, s.partition ORDER BY s.seq
                       ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS state_seq
        FROM timeline s JOIN clusters c ON c.cluster_id = s.cluster_id) a
  JOIN clusters c ON c.cluster_no = a.cluster_no
  WHERE a.is_state = 0
),
samples AS (
  SELECT smp.cluster_id, smp.seq, smp.topic, smp.partition, smp.s_hw AS hw, smp.s_leader, smp.s_replicas,
         smp.s_leos, st.a_isr AS isr_asof, a.state_seq
  FROM as_of a
  JOIN events st ON st.cluster_id = a.cluster_id AND st.seq = a.state_seq
  JOIN events smp ON smp.cluster_id = a.cluster_id AND smp.seq = a.seq
  WHERE st.has_after AND st.a_isr IS NOT NULL
),
per_replica AS (
  SELECT cluster_id, seq, topic, partition, hw, s_leader, isr_asof, state_seq,
         {at(s_replicas, i)} AS broker, {at(s_leos, i)} AS leo
  FROM (SELECT *, {explode_index(s_replicas)} AS i FROM samples) x
),
judged AS (
  SELECT * FROM per_replica WHERE leo >= 0 AND {contains(isr_asof, broker)}
),
lowest AS (
  SELECT cluster_id, seq, MIN(leo) AS min_leo FROM judged GROUP BY cluster_id, seq
),
worst AS (
  SELECT j.cluster_id, j.seq, j.topic, j.partition, j.hw, j.s_leader, j.isr_asof, j.state_seq,
         l.min_leo, MIN(j.broker) AS broker
  FROM judged j JOIN lowest l ON j.cluster_id = l.cluster_id AND j.seq = l.seq AND j.leo = l.min_leo
  GROUP BY j.cluster_id, j.seq, j.topic, j.partition, j.hw, j.s_leader, j.isr_asof, j.state_seq, l.min_leo
)
SELECT cluster_id, seq, state_seq AS related_seq, 'hw_above_isr_member_leo' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('hw <= min LEO over isr ', {show(isr_asof)}, ' = ', CAST(min_leo AS STRING)) AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' hw ', CAST(hw AS STRING), ' from leader ',
              CAST(s_leader AS STRING), '; broker ', CAST(broker AS STRING), ' LEO ', CAST(min_leo AS STRING)) AS actual,
       CAST(hw - min_leo AS BIGINT) AS magnitude
FROM worst
WHERE hw > min_leo
