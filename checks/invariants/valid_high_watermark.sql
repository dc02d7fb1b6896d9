-- I8 (ValidHighWatermark). From OffsetSample events: the leader's HW ≤ the LEO of every ISR member,
-- with the ISR of the partition's latest state before the sample. A replica that did not answer
-- (LEO -1), or that the sample does not list, is not evidence. The sampler reads HW first and
-- LEOs after, so a healthy partition cannot look violated.
-- elr_member_behind_hw_at_entry (KIP-966; the ELR half of the TLA+ LeaderCandidateCompletenessProperty): a
-- broker enters the ELR from the ISR, so it holds every record committed by then, and keeps them while in
-- the ELR (a broker that shut down uncleanly leaves it, ReplicationControlManager.handleBrokerUncleanShutdown).
-- A sample taken while it is in the ELR (as of the sample's state) must show its LEO (if it answered) at or
-- above the HW sampled last before the change that put it there, in the same partition incarnation. A
-- member that entered at a create or a bootstrap (a snapshot after a gap: when it entered is not known) has no
-- such HW: no evidence until it enters again. related_seq: the entering change.
-- Cost: the partition's timeline (fragments/partition_timeline.sql, shared with high_watermark_monotonic:
-- one window pass per partition in seq order) gives each sample the seq of the state it was taken in;
-- the sample and that state's ISR are fetched by key.
-- The ELR rule's entries and samples are few (ELR members only): one window pass over them, per broker.
WITH timeline AS (SELECT * FROM {shared(partition_timeline)} t),
as_of AS (  -- the samples, each with its state's seq
  SELECT cluster_id, seq, state_seq FROM timeline WHERE is_sample = 1
),
samples AS (
  SELECT smp.cluster_id, smp.seq, smp.topic, smp.partition, smp.s_hw AS hw, smp.s_leader, smp.s_replicas,
         smp.s_leos, st.a_isr AS isr_asof, st.a_elr AS elr_asof, a.state_seq
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
),
elr_entries AS (  -- changes putting brokers into the ELR: who entered, and the HW sampled last before
  SELECT t.cluster_id, t.seq, e.topic, e.partition,
         CASE WHEN e.has_before AND NOT e.bootstrap THEN {except(e.a_elr, e.b_elr)} ELSE e.a_elr END AS entered,
         CASE WHEN e.has_before AND NOT e.bootstrap AND t.prev_seq IS NOT NULL
                   AND (t.last_reset IS NULL OR t.last_reset < t.prev_seq) THEN t.prev_hw END AS entry_hw
  FROM timeline t JOIN events e ON e.cluster_id = t.cluster_id AND e.seq = t.seq
  WHERE t.is_elr_entry = 1
),
elr_samples AS (SELECT * FROM samples WHERE {size(elr_asof)} > 0),
elr_rows AS (  -- per partition and broker in seq order: its entries, and the samples while it is in the ELR
  SELECT cluster_id, topic, partition, broker, seq, 1 AS is_entry, CAST(NULL AS BIGINT) AS leo,
         CAST(NULL AS BIGINT) AS hw
  FROM (SELECT cluster_id, seq, topic, partition, {explode(entered)} AS broker FROM elr_entries) x
  UNION ALL
  SELECT cluster_id, topic, partition, broker, seq, 0, leo, hw
  FROM (SELECT cluster_id, seq, topic, partition, hw, elr_asof, {at(s_replicas, i)} AS broker,
               {at(s_leos, i)} AS leo
        FROM (SELECT *, {explode_index(s_replicas)} AS i FROM elr_samples) y) z
  WHERE leo >= 0 AND {contains(elr_asof, broker)}
),
elr_entered AS (
  SELECT *, {last_nn(CASE WHEN is_entry = 1 THEN seq END)} OVER w AS entry_seq
  FROM elr_rows
  WINDOW w AS (PARTITION BY cluster_id, topic, partition, broker ORDER BY seq
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
elr_behind AS (
  SELECT s.cluster_id, s.seq, s.topic, s.partition, s.broker, s.leo, s.hw, en.seq AS entry_seq, en.entry_hw
  FROM elr_entered s JOIN elr_entries en ON en.cluster_id = s.cluster_id AND en.seq = s.entry_seq
  WHERE s.is_entry = 0 AND en.entry_hw IS NOT NULL AND s.leo < en.entry_hw
)
SELECT cluster_id, seq, state_seq AS related_seq, 'hw_above_isr_member_leo' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('hw <= min LEO over isr ', {show(isr_asof)}, ' = ', CAST(min_leo AS STRING)) AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' hw ', CAST(hw AS STRING), ' from leader ',
              CAST(s_leader AS STRING), '; broker ', CAST(broker AS STRING), ' LEO ', CAST(min_leo AS STRING)) AS actual,
       CAST(hw - min_leo AS BIGINT) AS magnitude
FROM worst
UNION ALL
SELECT cluster_id, seq, entry_seq, 'elr_member_behind_hw_at_entry', 'violated', CAST(NULL AS STRING),
       concat('elr member ', CAST(broker AS STRING), ' LEO >= hw ', CAST(entry_hw AS STRING),
              ' sampled before it entered the elr'),
       concat(topic, '-', CAST(partition AS STRING), ' broker ', CAST(broker AS STRING), ' LEO ', CAST(leo AS STRING),
              ' (sampled hw now ', CAST(hw AS STRING), ')'),
       CAST(entry_hw - leo AS BIGINT)
FROM elr_behind
