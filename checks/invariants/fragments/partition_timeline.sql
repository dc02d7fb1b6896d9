-- One timeline per partition (by cluster, topic name and partition) over its states (PartitionChange)
-- and its samples (OffsetSample with an HW), read by valid_high_watermark and high_watermark_monotonic
-- through the shared(partition_timeline) template: an engine running both builds it once
-- (checks/catalog.py); the window pass is most of either query's cost (a 10M-row window sort is ~4 s
-- on the 2-core bench machine), and before it was made twice.
-- Per row, along the partition's rows in seq order, the seq of the last row of a kind: state_seq the
-- last state up to this row (a sample's state as of it), last_reset the last create or delete (a new
-- incarnation begins), last_unclean the last unclean election, prev_seq the last sample strictly before
-- the row, and prev_hw that sample's HW (hw is set on every sample row and no other). As seq rises along
-- the window, the last non-null value is the running maximum; DuckDB computes it faster than MAX.
-- is_unclean is unclean_election_allowed.sql's test. The window is keyed by the topic's number
-- (fragments/topic_numbers.sql), not the cluster id and topic name (string keys slow the sort), and
-- carries no lists: the queries fetch those by key for the rows they judge, and neither the topic name nor
-- the partition (each reader takes them from the events it fetches: fewer strings written per row). Only samples, elections
-- and changes that put brokers into the ELR (is_elr_entry: a state whose ELR is not the one before's plus
-- nothing, valid_high_watermark's HW at entry) come out (the rows the two queries read); plain state rows are
-- there for the running values only.
WITH topics AS ({include(topic_numbers)})
SELECT /*+ BROADCAST(c) */ c.cluster_id, t.seq, t.is_sample, t.is_election, t.is_unclean, t.is_elr_entry,
       t.a_leader, t.hw, t.state_seq, t.last_reset, t.last_unclean, t.prev_seq, t.prev_hw
FROM (
  SELECT s.topic_no, s.seq, s.partition, s.is_sample, s.is_election, s.is_unclean, s.is_elr_entry, s.a_leader, s.hw,
         {last_nn(CASE WHEN s.is_sample = 0 THEN s.seq END)} OVER upto AS state_seq,
         {last_nn(CASE WHEN s.is_reset = 1 THEN s.seq END)} OVER upto AS last_reset,
         {last_nn(CASE WHEN s.is_unclean = 1 THEN s.seq END)} OVER upto AS last_unclean,
         {last_nn(CASE WHEN s.is_sample = 1 THEN s.seq END)} OVER earlier AS prev_seq,
         {last_nn(s.hw)} OVER earlier AS prev_hw
  FROM (
    SELECT /*+ BROADCAST(n) */ n.topic_no, e.seq, e.partition, 0 AS is_sample,
           CASE WHEN NOT e.has_before OR NOT e.has_after THEN 1 ELSE 0 END AS is_reset,
           CASE WHEN e.has_before AND e.has_after AND NOT e.bootstrap AND e.a_leader <> -1 AND e.a_leader <> e.b_leader
                THEN 1 ELSE 0 END AS is_election,
           CASE WHEN e.has_before AND e.has_after AND NOT e.bootstrap AND e.a_leader <> -1 AND e.a_leader <> e.b_leader
                     AND ((NOT {contains(e.b_isr, e.a_leader)} AND NOT {contains(e.b_elr, e.a_leader)}
                           AND NOT ({contains(e.b_adding, e.a_leader)} AND NOT {contains(e.a_adding, e.a_leader)}
                                    AND {contains(e.a_isr, e.a_leader)}))
                          OR e.election = 'UNCLEAN' OR (e.a_recovery = 'RECOVERING' AND e.b_recovery <> 'RECOVERING'))
                THEN 1 ELSE 0 END AS is_unclean,
           CASE WHEN e.has_after AND {size(e.a_elr)} > 0
                     AND (NOT e.has_before OR e.bootstrap OR NOT {subset(e.a_elr, e.b_elr)})
                THEN 1 ELSE 0 END AS is_elr_entry,
           e.a_leader, CAST(NULL AS BIGINT) AS hw
    FROM events e JOIN topics n ON n.cluster_id = e.cluster_id AND n.topic IS NOT DISTINCT FROM e.topic
    WHERE e.kind = 'PartitionChange'
    UNION ALL
    SELECT /*+ BROADCAST(n) */ n.topic_no, e.seq, e.partition, 1, 0, 0, 0, 0, CAST(NULL AS INT), e.s_hw
    FROM events e JOIN topics n ON n.cluster_id = e.cluster_id AND n.topic IS NOT DISTINCT FROM e.topic
    WHERE e.kind = 'OffsetSample' AND e.s_hw >= 0
  ) s
  -- one BIGINT partition key, the topic's number and the partition (an int) side by side: the window sorts
  -- fewer key columns (4.54 -> 4.43 s at 10M events)
  WINDOW upto AS (PARTITION BY s.topic_no * 4294967296 + s.partition ORDER BY s.seq
                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
         earlier AS (PARTITION BY s.topic_no * 4294967296 + s.partition ORDER BY s.seq
                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
) t
JOIN topics c ON c.topic_no = t.topic_no
WHERE t.is_sample = 1 OR t.is_election = 1 OR t.is_elr_entry = 1
