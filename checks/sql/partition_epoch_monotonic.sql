-- I4. The partition epoch strictly rises on every PartitionChange that is not a create, a delete
-- or a bootstrap (KRaft bumps it on every PartitionChangeRecord; ZK: the state znode version).
SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, 'partition_epoch_not_increased' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('partition epoch > ', CAST(b_partition_epoch AS STRING)) AS expected,
       concat('partition epoch ', CAST(b_partition_epoch AS STRING), ' -> ', CAST(a_partition_epoch AS STRING)) AS actual,
       CAST(b_partition_epoch - a_partition_epoch + 1 AS BIGINT) AS magnitude
FROM events
WHERE kind = 'PartitionChange' AND NOT bootstrap AND has_before AND has_after
  AND NOT {contains(changes, 'CREATE')}
  AND a_partition_epoch <= b_partition_epoch
