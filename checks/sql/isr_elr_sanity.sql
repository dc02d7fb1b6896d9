-- I6 (ValidControllerIsrAndElr, KIP-455 lists). In every partition state after a change:
-- ELR ⊆ replicas, ISR ∩ ELR = ∅, adding ∩ removing = ∅, adding ∪ removing ⊆ replicas.
WITH st AS (
  SELECT cluster_id, seq, a_isr, a_elr, a_replicas, a_adding, a_removing
  FROM events WHERE kind = 'PartitionChange' AND has_after
)
SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, 'elr_not_subset_of_replicas' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('elr ⊆ replicas ', {show(a_replicas)}) AS expected,
       concat('elr ', {show(a_elr)}) AS actual,
       CAST({size({except(a_elr, a_replicas)})} AS BIGINT) AS magnitude
FROM st WHERE NOT {subset(a_elr, a_replicas)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'isr_elr_overlap', 'violated', CAST(NULL AS STRING),
       'isr ∩ elr = []',
       concat('isr ', {show(a_isr)}, ', elr ', {show(a_elr)}),
       CAST({size({intersect(a_isr, a_elr)})} AS BIGINT)
FROM st WHERE NOT {disjoint(a_isr, a_elr)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'adding_removing_overlap', 'violated', CAST(NULL AS STRING),
       'adding ∩ removing = []',
       concat('adding ', {show(a_adding)}, ', removing ', {show(a_removing)}),
       CAST({size({intersect(a_adding, a_removing)})} AS BIGINT)
FROM st WHERE NOT {disjoint(a_adding, a_removing)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'adding_or_removing_not_in_replicas', 'violated', CAST(NULL AS STRING),
       concat('adding ∪ removing ⊆ replicas ', {show(a_replicas)}),
       concat('adding ', {show(a_adding)}, ', removing ', {show(a_removing)}),
       CAST({size({except({union(a_adding, a_removing)}, a_replicas)})} AS BIGINT)
FROM st WHERE NOT {subset({union(a_adding, a_removing)}, a_replicas)}
