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
WITH stream AS (
  SELECT cluster_id, seq, topic, partition, 0 AS is_sample,
         CASE WHEN NOT has_before OR NOT has_after THEN 1 ELSE 0 END AS is_reset,
         CASE WHEN has_before AND has_after AND NOT bootstrap AND a_leader <> -1 AND a_leader <> b_leader
                   AND ((NOT {contains(b_isr, a_leader)} AND NOT {contains(b_elr, a_leader)}
                         AND NOT ({contains(b_adding, a_leader)} AND NOT {contains(a_adding, a_leader)}
                                  AND {contains(a_isr, a_leader)}))
                        OR election = 'UNCLEAN' OR (a_recovery = 'RECOVERING' AND b_recovery <> 'RECOVERING'))
              THEN 1 ELSE 0 END AS is_unclean,
         CAST(NULL AS BIGINT) AS hw, CAST(NULL AS INT) AS s_leader, CAST(NULL AS INT) AS s_leader_epoch
  FROM events WHERE kind = 'PartitionChange'
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 1, 0, 0, s_hw, s_leader, s_leader_epoch
  FROM events WHERE kind = 'OffsetSample' AND s_hw >= 0
),
counted AS (
  SELECT *,
         SUM(is_reset) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS incarnation,
         SUM(is_unclean) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq
                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS uncleans
  FROM stream
),
paired AS (
  SELECT cluster_id, seq, topic, partition, hw, s_leader, s_leader_epoch, uncleans,
         LAG(seq) OVER w AS prev_seq, LAG(hw) OVER w AS prev_hw, LAG(s_leader) OVER w AS prev_leader,
         LAG(s_leader_epoch) OVER w AS prev_leader_epoch, LAG(uncleans) OVER w AS prev_uncleans
  FROM counted
  WHERE is_sample = 1
  WINDOW w AS (PARTITION BY cluster_id, topic, partition, incarnation ORDER BY seq)
),
member_stream AS (
  SELECT cluster_id, seq, topic, partition, 1 AS is_state,
         CASE WHEN has_after THEN {union(a_isr, a_elr)} END AS members,
         CASE WHEN NOT has_before OR NOT has_after THEN 1 ELSE 0 END AS is_reset,
         CASE WHEN has_before AND has_after AND NOT bootstrap AND a_leader <> -1 AND a_leader <> b_leader
              THEN 1 ELSE 0 END AS is_election,
         a_leader, CAST(NULL AS BIGINT) AS hw, {null_ints()} AS s_replicas, {null_longs()} AS s_leos
  FROM events WHERE kind = 'PartitionChange'
  UNION ALL
  SELECT cluster_id, seq, topic, partition, 0, {null_ints()}, 0, 0, CAST(NULL AS INT), s_hw, s_replicas, s_leos
  FROM events WHERE kind = 'OffsetSample' AND s_hw >= 0
),
member_versioned AS (
  SELECT *,
         SUM(is_state) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS version,
         SUM(is_reset) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS incarnation,
         SUM(1 - is_state) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n_samples
  FROM member_stream
),
member_as_of AS (  -- each sample with the ISR ∪ ELR of the state it was taken in
  SELECT *,
         FIRST_VALUE(members) OVER (PARTITION BY cluster_id, topic, partition, version ORDER BY seq
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS members_asof
  FROM member_versioned
),
last_sample AS (  -- each election with the last sample of its incarnation before it
  SELECT *,
         FIRST_VALUE(is_state) OVER g AS g_is_state, FIRST_VALUE(seq) OVER g AS sample_seq,
         FIRST_VALUE(hw) OVER g AS sample_hw, FIRST_VALUE(s_replicas) OVER g AS sample_replicas,
         FIRST_VALUE(s_leos) OVER g AS sample_leos, FIRST_VALUE(members_asof) OVER g AS sample_members
  FROM member_as_of
  WINDOW g AS (PARTITION BY cluster_id, topic, partition, incarnation, n_samples ORDER BY seq
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
elections AS (
  SELECT l.cluster_id, l.seq, l.topic, l.partition, l.a_leader, l.sample_seq, l.sample_hw, l.sample_members,
         CASE WHEN {position(l.sample_replicas, l.a_leader)} > 0
              THEN {at(l.sample_leos, {position(l.sample_replicas, l.a_leader)})} END AS leader_leo,
         c.is_unclean
  FROM last_sample l
  JOIN counted c ON c.cluster_id = l.cluster_id AND c.seq = l.seq AND c.is_sample = 0
  WHERE l.is_state = 1 AND l.is_election = 1 AND l.g_is_state = 0
),
behind AS (
  SELECT * FROM elections
  WHERE leader_leo >= 0 AND leader_leo < sample_hw
    AND (is_unclean = 1 OR {contains(sample_members, a_leader)})
)
SELECT cluster_id, seq, prev_seq AS related_seq,
       CASE WHEN prev_leader <> s_leader THEN 'hw_decreased_across_leader_change' ELSE 'hw_decreased' END AS rule,
       CASE WHEN uncleans > prev_uncleans THEN 'allowed' ELSE 'violated' END AS status,
       CASE WHEN uncleans > prev_uncleans THEN 'unclean election between the samples (may truncate)' END AS allowance,
       concat('hw >= ', CAST(prev_hw AS STRING)) AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' hw ', CAST(prev_hw AS STRING), ' -> ', CAST(hw AS STRING),
              ', leader ', CAST(prev_leader AS STRING), ' (epoch ', CAST(prev_leader_epoch AS STRING), ') -> ',
              CAST(s_leader AS STRING), ' (epoch ', CAST(s_leader_epoch AS STRING), ')') AS actual,
       CAST(prev_hw - hw AS BIGINT) AS magnitude
FROM paired
WHERE prev_hw IS NOT NULL AND hw < prev_hw
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
