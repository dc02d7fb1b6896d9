-- I9. A partition's sampled HW never decreases, in particular across leader changes. Samples are
-- compared with the previous sample of the same partition incarnation (a create or delete starts a
-- new one). A drop after an unclean election between the two samples (new leader outside the
-- previous ISR and ELR, or labelled UNCLEAN / entering RECOVERING: data may be truncated; the same test as
-- unclean_election_allowed.sql) is reported as allowed.
-- Committed data at elections (Jepsen's lost writes, as far as samples can see), against the last
-- sample of the partition's incarnation before the election:
--  new_leader_behind_committed (violated): a clean election whose new leader was in the ISR or ELR as of
--    that sample, where it reported a LEO below the sample's HW (KIP-966: an ELR member holds every
--    record committed while it was in the ISR, and the HW does not advance while |ISR| < min ISR);
--  unclean_election_data_loss (allowed): an unclean election whose new leader's sampled LEO is below
--    the sampled HW; magnitude = the committed records beyond its log, i.e. lost.
-- A LEO of -1 (no answer) or a leader the sample does not list is no evidence. The HW sampled after an
-- election going below the HW before it is the hw_decreased_across_leader_change rule above.
-- Cost: one window pass per partition in seq order numbers nothing: it carries, for every row, the seq of
-- the last reset, unclean election, state and sample before it (running maxima, seq rising) and the last
-- sampled HW; lists and the previous sample's details are fetched by key for the few rows that need them.
WITH stream AS (
  SELECT cluster_id, seq, topic, partition, 0 AS is_sample,
         CASE WHEN NOT has_before OR NOT has_after THEN 1 ELSE 0 END AS is_reset,
         CASE WHEN has_before AND has_after AND NOT bootstrap AND a_leader <> -1 AND a_leader <> b_leader
              THEN 1 ELSE 0 END AS is_election,
         CASE WHEN has_before AND has_after AND NOT bootstrap AND a_leader <> -1 AND a_leader <> b_leader
                   AND ((NOT {contains(b_isr, a_leader)} AND NOT {contains(b_elr, a_leader)}
                         AND NOT ({contains(b_adding, a_leader)} AND NOT {contains(a_adding, a_leader)}
                                  AND {contains(a_isr, a_leader)}))
                        OR election = 'UNCLEAN' OR (a_recovery = 'RECOVERING' AND b_recovery <> 'RECOVERING'))
              THEN 1 ELSE 0 END AS is_unclean,
         a_leader, CAST(NULL AS BIGINT) AS hw, CAST(NULL AS INT) AS s_leader, CAST(NULL AS INT) AS s_leader_epoch
  FROM events WHERE kind = 'PartitionChange'
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 1, 0, 0, 0, CAST(NULL AS INT), s_hw, s_leader, s_leader_epoch
  FROM events WHERE kind = 'OffsetSample' AND s_hw >= 0
),
ordered AS (
  SELECT *,
         MAX(CASE WHEN is_reset = 1 THEN seq END) OVER upto AS last_reset,
         MAX(CASE WHEN is_unclean = 1 THEN seq END) OVER upto AS last_unclean,
         MAX(CASE WHEN is_sample = 0 THEN seq END) OVER upto AS state_seq,
         MAX(CASE WHEN is_sample = 1 THEN seq END) OVER earlier AS prev_seq,
         {last_nn(hw)} OVER earlier AS prev_hw  -- hw is set on every sample row, so this is prev_seq's
  FROM stream
  WINDOW upto AS (PARTITION BY cluster_id, topic, partition ORDER BY seq
                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
         earlier AS (PARTITION BY cluster_id, topic, partition ORDER BY seq
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
in_incarnation AS (  -- rows with a previous sample of the same partition incarnation (no reset since)
  SELECT * FROM ordered
  WHERE (is_sample = 1 OR is_election = 1) AND prev_seq IS NOT NULL AND (last_reset IS NULL OR last_reset < prev_seq)
),
drops AS (
  SELECT d.cluster_id, d.seq, d.prev_seq, d.topic, d.partition, d.hw, d.prev_hw, d.s_leader, d.s_leader_epoch,
         p.s_leader AS prev_leader, p.s_leader_epoch AS prev_leader_epoch,
         CASE WHEN d.last_unclean > d.prev_seq THEN 1 ELSE 0 END AS unclean_between
  FROM in_incarnation d JOIN events p ON p.cluster_id = d.cluster_id AND p.seq = d.prev_seq
  WHERE d.is_sample = 1 AND d.hw < d.prev_hw
),
elections AS (  -- each election with the last sample of its incarnation before it, and that sample's state
  SELECT e.cluster_id, e.seq, e.topic, e.partition, e.a_leader, e.is_unclean, e.prev_seq AS sample_seq,
         e.prev_hw AS sample_hw, smp.s_replicas AS sample_replicas, smp.s_leos AS sample_leos,
         s.state_seq AS sample_state_seq
  FROM in_incarnation e
  JOIN ordered s ON s.cluster_id = e.cluster_id AND s.seq = e.prev_seq
  JOIN events smp ON smp.cluster_id = e.cluster_id AND smp.seq = e.prev_seq
  WHERE e.is_election = 1
),
elections_leo AS (
  SELECT e.cluster_id, e.seq, e.topic, e.partition, e.a_leader, e.is_unclean, e.sample_seq, e.sample_hw,
         CASE WHEN st.has_after THEN {union(st.a_isr, st.a_elr)} END AS sample_members,
         CASE WHEN {position(e.sample_replicas, e.a_leader)} > 0
              THEN {at(e.sample_leos, {position(e.sample_replicas, e.a_leader)})} END AS leader_leo
  FROM elections e LEFT JOIN events st ON st.cluster_id = e.cluster_id AND st.seq = e.sample_state_seq
),
behind AS (
  SELECT * FROM elections_leo
  WHERE leader_leo >= 0 AND leader_leo < sample_hw
    AND (is_unclean = 1 OR {contains(sample_members, a_leader)})
)
SELECT cluster_id, seq, prev_seq AS related_seq,
       CASE WHEN prev_leader <> s_leader THEN 'hw_decreased_across_leader_change' ELSE 'hw_decreased' END AS rule,
       CASE WHEN unclean_between = 1 THEN 'allowed' ELSE 'violated' END AS status,
       CASE WHEN unclean_between = 1 THEN 'unclean election between the samples (may truncate)' END AS allowance,
       concat('hw >= ', CAST(prev_hw AS STRING)) AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' hw ', CAST(prev_hw AS STRING), ' -> ', CAST(hw AS STRING),
              ', leader ', CAST(prev_leader AS STRING), ' (epoch ', CAST(prev_leader_epoch AS STRING), ') -> ',
              CAST(s_leader AS STRING), ' (epoch ', CAST(s_leader_epoch AS STRING), ')') AS actual,
       CAST(prev_hw - hw AS BIGINT) AS magnitude
FROM drops
UNION ALL
SELECT cluster_id, seq, sample_seq,
       CASE WHEN is_unclean = 1 THEN 'unclean_election_data_loss' ELSE 'new_leader_behind_committed' END,
       CASE WHEN is_unclean = 1 THEN 'allowed' ELSE 'violated' END,
       CASE WHEN is_unclean = 1 THEN 'unclean election: committed records beyond the log of the new leader are lost' END,
       concat('new leader ', CAST(a_leader AS STRING), ' holds the committed records: LEO >= hw ',
              CAST(sample_hw AS STRING), ' sampled at related seq'),
       concat(topic, '-', CAST(partition AS STRING), ' leader -> ', CAST(a_leader AS STRING), ' with sampled LEO ',
              CAST(leader_leo AS STRING), ', isr ∪ elr then ', {show(sample_members)}),
       CAST(sample_hw - leader_leo AS BIGINT)
FROM behind
