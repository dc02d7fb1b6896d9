-- I6 (ValidControllerIsrAndElr, KIP-455 lists, KIP-966 ELR). In every partition state after a change:
-- ELR ⊆ replicas, ISR ∩ ELR = ∅, adding ∩ removing = ∅, adding ∪ removing ⊆ replicas.
-- ELR membership (KIP-966; the TLA+ spec's ValidControllerIsrAndElr): a broker enters the ELR only
-- from the ISR of the state before (the controller moves ISR members it removes into the ELR), and
-- no ELR or last known ELR exists at a metadata.version below 4.0-IV0 (22), whose partition records
-- cannot carry them (MetadataVersion.isElrSupported; PartitionRecord/PartitionChangeRecord v2), nor in a
-- ZooKeeper source's states (the partition state znode, LeaderAndIsr, has no such field).
-- KIP-966 rules of Kafka's PartitionChangeBuilder (TLA+: ValidControllerIsrAndElr, MinIsrRecoveryQuorum):
--  the ELR is empty while |ISR| >= min.insync.replicas (maybePopulateTargetElr clears it), judged where
--  min.insync.replicas is known as of the change (the topic's config, else the cluster default; Kafka
--  writes the cluster default into the metadata when ELR is enabled); and a leader comes from the ELR
--  only when the ISR apart from it is empty (isValidNewLeader: ISR member, or ELR member when the
--  target ISR is empty).
-- isr_empty_without_elr (TLA+: v3_5_properties.tla's ValidControllerState, whose conjunct isr # {} KIP-966
-- dropped): where no ELR can exist the ISR is never empty. Kafka writes an empty ISR only with eligible
-- leader replicas enabled (PartitionChangeBuilder.build); otherwise the last member stays when its broker
-- goes, as in ZooKeeper mode (ReplicaStateMachine.doRemoveReplicasFromIsr). No ELR can exist in a ZooKeeper
-- source's states and below metadata.version 22. A cluster at 22 or above with ELR disabled is not judged:
-- that was a controller config (eligible.leader.replicas.enable) before it was a feature level, and neither
-- the config nor, after a downgrade of the feature, the ELRs the partitions kept are in the metadata.
-- Every rule needs a non-empty list (ELR, adding, removing, last known ELR after the change, or the ELR
-- before it for a leader from the ELR) or an empty ISR: an empty list breaks none of them, and most changes
-- have none of these, so `st` keeps only the changes with one (a cheap length each), once, and the set tests
-- run on few rows (Spark computes `st` once for its nine readers; 6.6M states at 10M events before). A
-- state's lists are never NULL (the Avro arrays are required).
WITH st AS (
  SELECT cluster_id, seq, topic, a_isr, a_elr, a_replicas, a_adding, a_removing, a_last_known_elr,
         b_isr, b_elr, has_before, bootstrap, metadata_version, a_leader, b_leader, source_kind
  FROM events
  WHERE kind = 'PartitionChange' AND has_after
    AND ({size(a_elr)} > 0 OR {size(a_adding)} > 0 OR {size(a_removing)} > 0 OR {size(a_last_known_elr)} > 0
         OR {size(b_elr)} > 0 OR {size(a_isr)} = 0)
),
elr_states AS (SELECT * FROM st WHERE {size(a_elr)} > 0),
config_changes AS (  -- min.insync.replicas: the topic's, else the cluster default (a non-integer: NULL)
  SELECT cluster_id, seq, TRY_CAST(config_value AS INT) AS value,
         CASE WHEN config_type = 'TOPIC' THEN concat('topic:', config_resource) ELSE 'cluster:' END AS scope
  FROM events
  WHERE kind = 'ConfigChange' AND config_name = 'min.insync.replicas'
    AND (config_type = 'TOPIC' OR (config_type = 'BROKER' AND config_resource = ''))
),
config_probes AS (
  SELECT cluster_id, seq, concat('topic:', topic) AS scope, 1 AS level FROM elr_states
  UNION ALL
  SELECT cluster_id, seq, 'cluster:', 2 FROM elr_states
),
{include(config_as_of)},
elr_with_min_isr AS (
  SELECT e.*, r.value_asof AS min_isr, r.config_seq
  FROM elr_states e
  JOIN config_resolved r ON e.cluster_id = r.cluster_id AND e.seq = r.seq
),
disjoint_pairs AS (  -- the two pairs of lists that must be disjoint, each with its rule and the names its findings use
  SELECT cluster_id, seq, 'isr_elr_overlap' AS rule, 'isr' AS left_name, a_isr AS left_list,
         'elr' AS right_name, a_elr AS right_list
  FROM st WHERE {size(a_elr)} > 0
  UNION ALL
  SELECT cluster_id, seq, 'adding_removing_overlap', 'adding', a_adding, 'removing', a_removing
  FROM st WHERE {size(a_adding)} > 0 AND {size(a_removing)} > 0
)
SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, 'elr_not_subset_of_replicas' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('elr ⊆ replicas ', {show(a_replicas)}) AS expected,
       concat('elr ', {show(a_elr)}) AS actual,
       CAST({size({except(a_elr, a_replicas)})} AS BIGINT) AS magnitude
FROM st WHERE {size(a_elr)} > 0 AND NOT {subset(a_elr, a_replicas)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), rule, 'violated', CAST(NULL AS STRING),
       concat(left_name, ' ∩ ', right_name, ' = []'),
       concat(left_name, ' ', {show(left_list)}, ', ', right_name, ' ', {show(right_list)}),
       CAST({size({intersect(left_list, right_list)})} AS BIGINT)
FROM disjoint_pairs WHERE NOT {disjoint(left_list, right_list)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'adding_or_removing_not_in_replicas', 'violated', CAST(NULL AS STRING),
       concat('adding ∪ removing ⊆ replicas ', {show(a_replicas)}),
       concat('adding ', {show(a_adding)}, ', removing ', {show(a_removing)}),
       CAST({size({except({union(a_adding, a_removing)}, a_replicas)})} AS BIGINT)
FROM st WHERE ({size(a_adding)} > 0 OR {size(a_removing)} > 0) AND NOT {subset({union(a_adding, a_removing)}, a_replicas)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'elr_member_not_from_isr', 'violated', CAST(NULL AS STRING),
       concat('new elr members from the previous isr ', {show(b_isr)}),
       concat('elr ', {show(b_elr)}, ' -> ', {show(a_elr)}),
       CAST({size({except({except(a_elr, b_elr)}, b_isr)})} AS BIGINT)
FROM st WHERE has_before AND NOT bootstrap AND {size(a_elr)} > 0 AND NOT {subset({except(a_elr, b_elr)}, b_isr)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'elr_before_metadata_version_22', 'violated', CAST(NULL AS STRING),
       'no elr or last known elr below metadata.version 22 (4.0-IV0)',
       concat('metadata.version ', CAST(metadata_version AS STRING), ', elr ', {show(a_elr)},
              ', last known elr ', {show(a_last_known_elr)}),
       CAST({size(a_elr)} + {size(a_last_known_elr)} AS BIGINT)
FROM st WHERE metadata_version < 22 AND ({size(a_elr)} > 0 OR {size(a_last_known_elr)} > 0)
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'elr_in_zookeeper_mode', 'violated', CAST(NULL AS STRING),
       'no elr or last known elr in ZooKeeper mode (the state znode has none)',
       concat('elr ', {show(a_elr)}, ', last known elr ', {show(a_last_known_elr)}),
       CAST({size(a_elr)} + {size(a_last_known_elr)} AS BIGINT)
FROM st WHERE source_kind = 'ZOOKEEPER' AND ({size(a_elr)} > 0 OR {size(a_last_known_elr)} > 0)
UNION ALL
SELECT cluster_id, seq, config_seq, 'elr_while_isr_at_min_isr', 'violated', CAST(NULL AS STRING),
       concat('elr empty while |isr| >= min.insync.replicas ', CAST(min_isr AS STRING)),
       concat('isr ', {show(a_isr)}, ', elr ', {show(a_elr)}),
       CAST({size(a_elr)} AS BIGINT)
FROM elr_with_min_isr WHERE {size(a_isr)} >= min_isr
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'leader_from_elr_while_isr_not_empty', 'violated', CAST(NULL AS STRING),
       concat('a leader from the elr ', {show(b_elr)}, ' only when the isr is empty'),
       concat('leader ', CAST(b_leader AS STRING), ' -> ', CAST(a_leader AS STRING), ', isr ', {show(b_isr)}, ' -> ',
              {show(a_isr)}),
       CAST({size({except(a_isr, {list1(a_leader)})})} AS BIGINT)
FROM st
WHERE has_before AND NOT bootstrap AND a_leader <> -1 AND a_leader <> b_leader
  AND {contains(b_elr, a_leader)} AND NOT {contains(b_isr, a_leader)}
  AND {size({except(a_isr, {list1(a_leader)})})} > 0
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'isr_empty_without_elr', 'violated', CAST(NULL AS STRING),
       'a non-empty isr where no elr can exist (ZooKeeper mode, metadata.version below 22)',
       concat('isr [], leader ', CAST(a_leader AS STRING), ', replicas ', {show(a_replicas)},
              CASE WHEN source_kind = 'ZOOKEEPER' THEN ', ZooKeeper mode'
                   ELSE concat(', metadata.version ', CAST(metadata_version AS STRING)) END),
       CAST(1 AS BIGINT)
FROM st WHERE {size(a_isr)} = 0 AND (source_kind = 'ZOOKEEPER' OR metadata_version < 22)
