-- I9. A partition's sampled HW never decreases, in particular across leader changes. Samples are
-- compared with the previous sample of the same partition incarnation (a create or delete starts a
-- new one). A drop after an unclean election between the two samples (new leader outside the
-- previous ISR and ELR, or labelled UNCLEAN / entering RECOVERING: data may be truncated; the same test as
-- unclean_election_allowed.sql) is reported as allowed.
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
