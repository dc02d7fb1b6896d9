-- I6 (ValidControllerIsrAndElr, KIP-455 lists, KIP-966 ELR). In every partition state after a change:
-- ELR ⊆ replicas, ISR ∩ ELR = ∅, adding ∩ removing = ∅, adding ∪ removing ⊆ replicas.
-- ELR membership (KIP-966; the TLA+ spec's ValidControllerIsrAndElr): a broker enters the ELR only
-- from the ISR of the state before (the controller moves ISR members it removes into the ELR), and
-- no ELR or last known ELR exists at a metadata.version below 4.0-IV0 (22), whose partition records
-- cannot carry them (MetadataVersion.isElrSupported; PartitionRecord/PartitionChangeRecord v2).
WITH st AS (
  SELECT cluster_id, seq, a_isr, a_elr, a_replicas, a_adding, a_removing, a_last_known_elr,
         b_isr, b_elr, has_before, bootstrap, metadata_version
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
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'elr_member_not_from_isr', 'violated', CAST(NULL AS STRING),
       concat('new elr members from the previous isr ', {show(b_isr)}),
       concat('elr ', {show(b_elr)}, ' -> ', {show(a_elr)}),
       CAST({size({except({except(a_elr, b_elr)}, b_isr)})} AS BIGINT)
FROM st WHERE has_before AND NOT bootstrap AND NOT {subset({except(a_elr, b_elr)}, b_isr)}
UNION ALL
SELECT cluster_id, seq, CAST(NULL AS BIGINT), 'elr_before_metadata_version_22', 'violated', CAST(NULL AS STRING),
       'no elr or last known elr below metadata.version 22 (4.0-IV0)',
       concat('metadata.version ', CAST(metadata_version AS STRING), ', elr ', {show(a_elr)},
              ', last known elr ', {show(a_last_known_elr)}),
       CAST({size(a_elr)} + {size(a_last_known_elr)} AS BIGINT)
FROM st WHERE metadata_version < 22 AND ({size(a_elr)} > 0 OR {size(a_last_known_elr)} > 0)
