-- I8 (ValidHighWatermark). From OffsetSample events: the leader's HW ≤ the LEO of every ISR member,
-- with the ISR of the partition's latest state before the sample. A replica that did not answer
-- (LEO -1), or that the sample does not list, is not evidence. The sampler reads HW first and
-- LEOs after, so a healthy partition cannot look violated.
-- Cost: the partition's timeline (fragments/partition_timeline.sql, shared with high_watermark_monotonic:
-- one window pass per partition in seq order) gives each sample the seq of the state it was taken in;
-- the sample and that state's ISR are fetched by key.
WITH as_of AS (  -- the samples, each with its state's seq
  SELECT cluster_id, seq, state_seq FROM {shared(partition_timeline)} t WHERE is_sample = 1
),
samples AS (
  SELECT smp.cluster_id, smp.seq, smp.topic, smp.partition, smp.s_hw AS hw, smp.s_leader, smp.s_replicas,
         smp.s_leos, st.a_isr AS isr_asof, a.state_seq
  FROM as_of a
  JOIN events st ON st.cluster_id = a.cluster_id AND st.seq = a.state_seq
  JOIN events smp ON smp.cluster_id = a.cluster_id AND smp.seq = a.seq
  WHERE st.has_after AND st.a_isr IS NOT NULL
),
lowest AS (  -- the least LEO (>= 0) among the ISR members the sample lists, one list expression per sample
  SELECT *, {min_at_members(s_replicas, s_leos, isr_asof)} AS min_leo FROM samples
),
above AS (SELECT * FROM lowest WHERE hw > min_leo),
per_replica AS (  -- only the samples above it: which member has that LEO (the least broker id)
  SELECT cluster_id, seq, topic, partition, hw, s_leader, isr_asof, state_seq, min_leo,
         {at(s_replicas, i)} AS broker, {at(s_leos, i)} AS leo
  FROM (SELECT *, {explode_index(s_replicas)} AS i FROM above) x
),
worst AS (
  SELECT cluster_id, seq, topic, partition, hw, s_leader, isr_asof, state_seq, min_leo, MIN(broker) AS broker
  FROM per_replica WHERE leo = min_leo AND {contains(isr_asof, broker)}
  GROUP BY cluster_id, seq, topic, partition, hw, s_leader, isr_asof, state_seq, min_leo
)
SELECT cluster_id, seq, state_seq AS related_seq, 'hw_above_isr_member_leo' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('hw <= min LEO over isr ', {show(isr_asof)}, ' = ', CAST(min_leo AS STRING)) AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' hw ', CAST(hw AS STRING), ' from leader ',
              CAST(s_leader AS STRING), '; broker ', CAST(broker AS STRING), ' LEO ', CAST(min_leo AS STRING)) AS actual,
       CAST(hw - min_leo AS BIGINT) AS magnitude
FROM worst
