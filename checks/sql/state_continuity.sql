-- Continuity. Each PartitionChange's `before` equals the `after` of the previous PartitionChange of
-- the same partition; a break means a lost (or forged) event. Bootstrap events are exempt (they
-- re-describe state), and so is the first event seen of a partition. A CaptureGap anywhere in the
-- cluster between the two events makes the break 'allowed (capture gap)'.
WITH ordered AS (
  SELECT cluster_id, seq, kind, topic, partition, bootstrap, has_before, has_after,
         b_replicas, b_isr, b_adding, b_removing, b_elr, b_last_known_elr, b_leader, b_leader_epoch,
         b_partition_epoch, b_recovery,
         a_replicas, a_isr, a_adding, a_removing, a_elr, a_last_known_elr, a_leader, a_leader_epoch,
         a_partition_epoch, a_recovery,
         SUM(CASE WHEN kind = 'CaptureGap' THEN 1 ELSE 0 END)
           OVER (PARTITION BY cluster_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS gaps
  FROM events WHERE kind IN ('PartitionChange', 'CaptureGap')
),
paired AS (
  SELECT *,
         LAG(seq) OVER w AS p_seq, LAG(has_after) OVER w AS p_has_after, LAG(gaps) OVER w AS p_gaps,
         LAG(a_replicas) OVER w AS p_replicas, LAG(a_isr) OVER w AS p_isr, LAG(a_adding) OVER w AS p_adding,
         LAG(a_removing) OVER w AS p_removing, LAG(a_elr) OVER w AS p_elr,
         LAG(a_last_known_elr) OVER w AS p_last_known_elr, LAG(a_leader) OVER w AS p_leader,
         LAG(a_leader_epoch) OVER w AS p_leader_epoch, LAG(a_partition_epoch) OVER w AS p_partition_epoch,
         LAG(a_recovery) OVER w AS p_recovery
  FROM ordered
  WHERE kind = 'PartitionChange'
  WINDOW w AS (PARTITION BY cluster_id, topic, partition ORDER BY seq)
),
compared AS (
  SELECT *,
         CASE WHEN NOT p_has_after THEN 10 ELSE
           (CASE WHEN b_replicas IS DISTINCT FROM p_replicas THEN 1 ELSE 0 END)
         + (CASE WHEN b_isr IS DISTINCT FROM p_isr THEN 1 ELSE 0 END)
         + (CASE WHEN b_adding IS DISTINCT FROM p_adding THEN 1 ELSE 0 END)
         + (CASE WHEN b_removing IS DISTINCT FROM p_removing THEN 1 ELSE 0 END)
         + (CASE WHEN b_elr IS DISTINCT FROM p_elr THEN 1 ELSE 0 END)
         + (CASE WHEN b_last_known_elr IS DISTINCT FROM p_last_known_elr THEN 1 ELSE 0 END)
         + (CASE WHEN b_leader IS DISTINCT FROM p_leader THEN 1 ELSE 0 END)
         + (CASE WHEN b_leader_epoch IS DISTINCT FROM p_leader_epoch THEN 1 ELSE 0 END)
         + (CASE WHEN b_partition_epoch IS DISTINCT FROM p_partition_epoch THEN 1 ELSE 0 END)
         + (CASE WHEN b_recovery IS DISTINCT FROM p_recovery THEN 1 ELSE 0 END) END AS n_diff
  FROM paired
  WHERE NOT bootstrap AND has_before AND p_seq IS NOT NULL
)
SELECT cluster_id, seq, p_seq AS related_seq,
       CASE WHEN NOT p_has_after THEN 'before_of_deleted_partition' ELSE 'before_differs_from_previous_after' END AS rule,
       CASE WHEN gaps > p_gaps THEN 'allowed' ELSE 'violated' END AS status,
       CASE WHEN gaps > p_gaps THEN 'capture gap between the two events' END AS allowance,
       CASE WHEN NOT p_has_after THEN 'no before (partition deleted at related seq)'
            ELSE concat('before = previous after: leader ', CAST(p_leader AS STRING),
                        ' le ', CAST(p_leader_epoch AS STRING), ' pe ', CAST(p_partition_epoch AS STRING),
                        ' isr ', {show(p_isr)}, ' replicas ', {show(p_replicas)},
                        ' adding ', {show(p_adding)}, ' removing ', {show(p_removing)},
                        ' elr ', {show(p_elr)}, ' recovery ', p_recovery) END AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' before: leader ', CAST(b_leader AS STRING),
              ' le ', CAST(b_leader_epoch AS STRING), ' pe ', CAST(b_partition_epoch AS STRING),
              ' isr ', {show(b_isr)}, ' replicas ', {show(b_replicas)},
              ' adding ', {show(b_adding)}, ' removing ', {show(b_removing)},
              ' elr ', {show(b_elr)}, ' recovery ', b_recovery) AS actual,
       CAST(n_diff AS BIGINT) AS magnitude
FROM compared
WHERE n_diff > 0
