-- I4. The partition epoch strictly rises on every PartitionChange that is not a create, a delete
-- or a bootstrap (KRaft bumps it on every PartitionChangeRecord; ZK: the state znode version).
-- ZooKeeper mode keeps the assignment (replicas, adding, removing) in another znode,
-- /brokers/topics/<topic>: a change of it alone leaves the state znode, and so its version, as it
-- was; it must still not go back. The same holds for a ZooKeeper-mode cluster's broker logs: an import of
-- them emits a change at an unchanged partition epoch only for that znode (a KRaft one never does).
SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, 'partition_epoch_not_increased' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('partition epoch > ', CAST(b_partition_epoch AS STRING)) AS expected,
       concat('partition epoch ', CAST(b_partition_epoch AS STRING), ' -> ', CAST(a_partition_epoch AS STRING)) AS actual,
       CAST(b_partition_epoch - a_partition_epoch + 1 AS BIGINT) AS magnitude
FROM events
WHERE kind = 'PartitionChange' AND NOT bootstrap AND has_before AND has_after
  AND NOT {contains(changes, 'CREATE')}
  AND a_partition_epoch <= b_partition_epoch
  AND NOT (coalesce(source_kind, '') IN ('ZOOKEEPER', 'BROKER_LOG') AND a_partition_epoch = b_partition_epoch
           AND a_leader = b_leader AND a_leader_epoch = b_leader_epoch
           AND {size(a_isr)} = {size(b_isr)} AND {subset(a_isr, b_isr)})
