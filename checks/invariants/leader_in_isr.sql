-- I5 (LeaderInIsr). In every partition state after a change: leader ∈ ISR ⊆ replicas. Leader -1
-- (no leader) is legal, also with a non-empty ISR (KAFKA/cruise-control#1828). Bootstrap states are
-- judged too: they are states.
-- `st` keeps only the states that break one of the three rules (one scan; its rows are read once per rule,
-- and Spark computes a relation read three times once: the broken states, not all 6.6M at 10M events).
-- A state's lists are never NULL and its leader is set, so the three tests are true or false.
WITH st AS (
  SELECT cluster_id, seq, a_leader, a_isr, a_replicas
  FROM events
  WHERE kind = 'PartitionChange' AND has_after
    AND ((a_leader <> -1 AND (NOT {contains(a_isr, a_leader)} OR NOT {contains(a_replicas, a_leader)}))
         OR NOT {subset(a_isr, a_replicas)})
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
