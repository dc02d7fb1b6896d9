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
-- Cost: the partition's timeline (fragments/partition_timeline.sql, shared with valid_high_watermark: one
-- window pass per partition in seq order) gives every sample and election the seq of the last reset,
-- unclean election, state and sample before it and the last sampled HW; the samples' and states' details
-- are fetched by key for the rows that need them, elections' lists only once the sample showed their
-- new leader behind.
WITH timeline AS (SELECT * FROM {shared(partition_timeline)} t),
in_incarnation AS (  -- rows with a previous sample of the same partition incarnation (no reset since)
  SELECT * FROM timeline
  WHERE prev_seq IS NOT NULL AND (last_reset IS NULL OR last_reset < prev_seq)
),
dropped AS (SELECT * FROM in_incarnation WHERE is_sample = 1 AND hw < prev_hw),
drop_samples AS (  -- the two samples of each drop, each once (through a GROUP BY: see sample_states)
  SELECT x.cluster_id, x.seq, x.topic, x.partition, x.s_leader, x.s_leader_epoch
  FROM events x
  JOIN (SELECT cluster_id, seq FROM (SELECT cluster_id, seq FROM dropped UNION ALL
                                     SELECT cluster_id, prev_seq FROM dropped) u
        GROUP BY cluster_id, seq) k
    ON x.cluster_id = k.cluster_id AND x.seq = k.seq
),
drops AS (
  SELECT d.cluster_id, d.seq, d.prev_seq, c.topic, c.partition, d.hw, d.prev_hw, c.s_leader, c.s_leader_epoch,
         p.s_leader AS prev_leader, p.s_leader_epoch AS prev_leader_epoch,
         CASE WHEN d.last_unclean > d.prev_seq THEN 1 ELSE 0 END AS unclean_between
  FROM dropped d
  JOIN drop_samples p ON p.cluster_id = d.cluster_id AND p.seq = d.prev_seq
  JOIN drop_samples c ON c.cluster_id = d.cluster_id AND c.seq = d.seq
),
elections_leo AS (  -- each election with the last sample of its incarnation before it: the new leader's LEO
  SELECT e.cluster_id, e.seq, smp.topic, smp.partition, e.a_leader, e.is_unclean, e.prev_seq AS sample_seq,
         e.prev_hw AS sample_hw,
         CASE WHEN {position(smp.s_replicas, e.a_leader)} > 0
              THEN {at(smp.s_leos, {position(smp.s_replicas, e.a_leader)})} END AS leader_leo
  FROM in_incarnation e JOIN events smp ON smp.cluster_id = e.cluster_id AND smp.seq = e.prev_seq
  WHERE e.is_election = 1
),
behind_leo AS (  -- ... behind that sample's HW: then the sample's state (as of it) says who was in ISR ∪ ELR
  SELECT e.cluster_id, e.seq, e.topic, e.partition, e.a_leader, e.is_unclean, e.sample_seq, e.sample_hw,
         e.leader_leo, s.state_seq AS sample_state_seq
  FROM elections_leo e JOIN timeline s ON s.cluster_id = e.cluster_id AND s.seq = e.sample_seq
  WHERE e.leader_leo >= 0 AND e.leader_leo < e.sample_hw
),
sample_states AS (  -- each state a sample was taken under, once, with its ISR ∪ ELR
  -- The keys come through a GROUP BY: DuckDB estimates it from the column's statistics and builds the join
  -- with the events table on it. Joined directly, its estimate of behind_leo (three joins deep) grew with
  -- every join, tenfold per join in a store of ten clusters (their seqs repeat), and it built the hash table
  -- on the events instead: 100M rows (35 s of this query's 79 s at 100M events).
  SELECT st.cluster_id, st.seq, CASE WHEN st.has_after THEN {union(st.a_isr, st.a_elr)} END AS members
  FROM events st
  JOIN (SELECT cluster_id, sample_state_seq AS seq FROM behind_leo GROUP BY cluster_id, sample_state_seq) k
    ON st.cluster_id = k.cluster_id AND st.seq = k.seq
),
elections_members AS (
  SELECT e.cluster_id, e.seq, e.topic, e.partition, e.a_leader, e.is_unclean, e.sample_seq, e.sample_hw,
         e.leader_leo, st.members AS sample_members
  FROM behind_leo e LEFT JOIN sample_states st ON st.cluster_id = e.cluster_id AND st.seq = e.sample_state_seq
),
behind AS (
  SELECT * FROM elections_members WHERE is_unclean = 1 OR {contains(sample_members, a_leader)}
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
