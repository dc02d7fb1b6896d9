-- I3. A partition's leader epoch never decreases, and rises on every leader change (to or from -1
-- included) and whenever replicas leave the replica set (Kafka forces a bump then). Version-aware:
-- an ISR shrink must bump it only on KRaft metadata.version < 12 (3.6-IV0, KAFKA-15021); a change
-- that only adds replicas (reassignment start, KAFKA-13790) keeps it. Bootstrap events are not
-- transitions and are not judged. ZooKeeper mode writes the bump to the partition state znode before
-- it shrinks the assignment znode (KafkaController.onPartitionReassignment: leader epoch bumped with
-- RS = TRS, then /brokers/topics updated), so there the replicas leave in a change of their own; in an
-- import of that cluster's broker logs, it is the change that keeps the partition epoch.
WITH pc AS (
  SELECT cluster_id, seq, metadata_version, source_kind, b_leader, a_leader, b_leader_epoch, a_leader_epoch,
         b_isr, a_isr, b_replicas, a_replicas, b_partition_epoch, a_partition_epoch
  FROM events
  WHERE kind = 'PartitionChange' AND NOT bootstrap AND has_before AND has_after
),
judged AS (
  SELECT cluster_id, seq, b_leader, a_leader, b_leader_epoch, a_leader_epoch, metadata_version, source_kind,
         CASE
           WHEN a_leader_epoch < b_leader_epoch THEN 'leader_epoch_decreased'
           WHEN a_leader_epoch = b_leader_epoch AND a_leader <> b_leader THEN 'leader_changed_without_epoch_bump'
           WHEN a_leader_epoch = b_leader_epoch AND NOT {subset(b_replicas, a_replicas)}
                AND coalesce(source_kind, '') <> 'ZOOKEEPER'
                AND NOT (source_kind = 'BROKER_LOG' AND a_partition_epoch = b_partition_epoch)
             THEN 'replicas_removed_without_epoch_bump'
           WHEN a_leader_epoch = b_leader_epoch AND NOT {subset(b_isr, a_isr)}
                AND metadata_version IS NOT NULL AND metadata_version < 12 AND source_kind <> 'ZOOKEEPER'
             THEN 'isr_shrink_without_epoch_bump_before_mv12'
         END AS rule
  FROM pc
)
SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       CASE WHEN rule = 'leader_epoch_decreased'
            THEN concat('leader epoch >= ', CAST(b_leader_epoch AS STRING))
            ELSE concat('leader epoch > ', CAST(b_leader_epoch AS STRING)) END AS expected,
       concat('leader ', CAST(b_leader AS STRING), ' -> ', CAST(a_leader AS STRING),
              ', leader epoch ', CAST(b_leader_epoch AS STRING), ' -> ', CAST(a_leader_epoch AS STRING),
              ', metadata.version ', coalesce(CAST(metadata_version AS STRING), 'unknown')) AS actual,
       CAST(b_leader_epoch - a_leader_epoch AS BIGINT) AS magnitude
FROM judged
WHERE rule IS NOT NULL
