-- I5 (LeaderInIsr). In every partition state after a change: leader ∈ ISR ⊆ replicas. Leader -1
-- (no leader) is legal, also with a non-empty ISR (KAFKA/cruise-control#1828). Bootstrap states are
-- judged too: they are states.
WITH st AS (
  SELECT cluster_id, seq, a_leader, a_isr, a_replicas
  FROM events WHERE kind = 'PartitionChange' AND has_after
)
SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, 'leader_not_in_isr' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('leader ', CAST(a_leader AS STRING), ' in isr') AS expected,
       concat('leader ', CAST(a_leader AS STRING), ', isr ', {show(a_isr)}) AS actual,
       CAST(1 AS BIGINT) AS magnitude
FROM st WHERE a_leader <> -1 AND NOT {contains(a_isr, a_leader)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'leader_not_in_replicas', 'violated', CAST(NULL AS STRING),
       concat('leader ', CAST(a_leader AS STRING), ' in replicas'),
       concat('leader ', CAST(a_leader AS STRING), ', replicas ', {show(a_replicas)}),
       CAST(1 AS BIGINT)
FROM st WHERE a_leader <> -1 AND NOT {contains(a_replicas, a_leader)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'isr_not_subset_of_replicas', 'violated', CAST(NULL AS STRING),
       concat('isr ⊆ replicas ', {show(a_replicas)}),
       concat('isr ', {show(a_isr)}, ', outside replicas: ', {show({except(a_isr, a_replicas)})}),
       CAST({size({except(a_isr, a_replicas)})} AS BIGINT)
FROM st WHERE NOT {subset(a_isr, a_replicas)}
