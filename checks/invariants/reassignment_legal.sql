-- I13. Reassignment transitions (KIP-455; KRaft PartitionChangeBuilder / ZK onPartitionReassignment):
--  start     (no adding/removing before, some after): replicas grow to OAR ∪ RAR (removing ⊆ old
--            replicas, adding new), leader and ISR unchanged; adding replicas never join the ISR here;
--  during    adding replicas join the ISR only through the sitting leader (no clean election in that
--            change; an unclean election, which resets the ISR to its new leader, is I12's business),
--            the replica set stays as it is;
--  complete  only when adding ⊆ ISR; replicas = target (old replicas minus removing), removing out
--            of the ISR, adding/removing cleared;
--  cancel    restores the original replicas (old replicas minus adding);
--  otherwise replicas never grow outside a reassignment (removal-only moves may finish in one step).
--  re-target (adding/removing change while in progress): removing only names replicas the partition
--            has (KRaft: removing = current replicas - new target; ZooKeeper: old replicas - target),
--            and replicas shrink only by adding replicas the new target drops, never by an original
--            replica while the adding replicas are not all in the ISR (that is completing early).
-- A change labelled REASSIGNMENT_CANCEL/COMPLETE is judged as such; unlabelled ones by their shape.
-- ZooKeeper mode (KafkaController.onPartitionReassignment): before the assignment znode
-- becomes RAR, the controller has bumped the leader epoch in the state znode (B3: a new leader from
-- RAR, or the sitting one re-sent with epoch + 1), so a completion whose leader epoch is not above
-- the one at the reassignment's start skipped that step (`zk_completed_without_leader_epoch_bump`).
-- Judged where the history shows the start; epochs only rise (I3), so the highest start epoch of
-- the partition's incarnation (topic id) is its latest start's.
WITH pc AS (
  SELECT cluster_id, seq, topic, partition, changes, topic_id, source_kind, a_leader_epoch,
         b_replicas, b_isr, b_adding, b_removing, b_leader,
         a_replicas, a_isr, a_adding, a_removing, a_leader,
         ({size(b_adding)} > 0 OR {size(b_removing)} > 0) AS b_in,
         ({size(a_adding)} > 0 OR {size(a_removing)} > 0) AS a_in
  FROM events
  WHERE kind = 'PartitionChange' AND NOT bootstrap AND has_before AND has_after
    AND NOT {contains(changes, 'CREATE')}
    -- a change outside any reassignment that keeps its replicas (most changes) matches no rule: not judged
    AND ({size(b_adding)} > 0 OR {size(b_removing)} > 0 OR {size(a_adding)} > 0 OR {size(a_removing)} > 0
         OR NOT coalesce(a_replicas = b_replicas, false))
),
-- Each change's phase (the first test that holds; coalesce(..., false): NULL does not hold), one branch per
-- phase so that the phase is a constant there: the rule CASE below tests the phase once per rule, and
-- DuckDB inlines a computed phase into each test, evaluating its set comparisons a dozen times a change.
phased AS (
  SELECT *, 'start' AS phase FROM pc WHERE coalesce(NOT b_in AND a_in, false)
  UNION ALL
  SELECT *, 'during' AS phase FROM pc WHERE coalesce(b_in AND a_in, false)
  UNION ALL
  SELECT *, CASE
              WHEN {contains(changes, 'REASSIGNMENT_CANCEL')} THEN 'cancel'
              WHEN {contains(changes, 'REASSIGNMENT_COMPLETE')} THEN 'complete'
              WHEN {set_eq(a_replicas, {except(b_replicas, b_adding)})}
                   AND NOT {set_eq(a_replicas, {except(b_replicas, b_removing)})} THEN 'cancel'
              ELSE 'complete'
            END AS phase
  FROM pc WHERE coalesce(b_in AND NOT a_in, false) OR (b_in AND a_in IS NULL)
  UNION ALL
  SELECT *, 'none' AS phase FROM pc WHERE NOT coalesce(b_in, false) AND NOT coalesce(NOT b_in AND a_in, false)
),
judged AS (
  SELECT *,
         CASE
           WHEN phase = 'start' AND NOT {disjoint(a_isr, a_adding)} THEN 'adding_joined_isr_at_start'
           WHEN phase = 'start' AND NOT ({set_eq(a_replicas, {union(b_replicas, a_adding)})}
                                         AND {subset(a_removing, b_replicas)}
                                         AND {disjoint(a_adding, b_replicas)}) THEN 'start_not_grow_to_union'
           WHEN phase = 'start' AND a_leader <> b_leader THEN 'start_changed_leader'
           WHEN phase = 'start' AND NOT {set_eq(a_isr, b_isr)} THEN 'start_changed_isr'
           WHEN phase = 'during' AND {set_eq(a_adding, b_adding)} AND {set_eq(a_removing, b_removing)}
                AND NOT {set_eq(a_replicas, b_replicas)} THEN 'replicas_changed_during_reassignment'
           WHEN phase = 'during' AND NOT {subset(a_removing, b_replicas)} THEN 'retarget_removing_not_replicas'
           WHEN phase = 'during' AND NOT {subset({except(b_replicas, a_replicas)}, b_adding)}
                AND NOT {subset(b_adding, a_isr)} THEN 'retarget_shrank_before_adding_in_isr'
           WHEN phase = 'during' AND NOT {subset({intersect(a_isr, b_adding)}, b_isr)}
                AND (a_leader <> b_leader OR a_leader = -1)
                AND NOT (a_leader <> -1 AND NOT {contains(b_isr, a_leader)})  -- unclean: ISR := [leader], see I12
             THEN 'adding_joined_isr_not_through_leader'
           WHEN phase = 'complete' AND NOT {subset(b_adding, a_isr)} THEN 'completed_before_adding_in_isr'
           WHEN phase = 'complete' AND NOT {set_eq(a_replicas, {except(b_replicas, b_removing)})}
             THEN 'completed_replicas_not_target'
           WHEN phase = 'complete' AND NOT {disjoint(a_isr, b_removing)} THEN 'completed_isr_keeps_removing'
           WHEN phase = 'cancel' AND NOT {set_eq(a_replicas, {except(b_replicas, b_adding)})}
             THEN 'cancel_not_restoring_replicas'
           WHEN phase = 'none' AND NOT {subset(a_replicas, b_replicas)} THEN 'replicas_added_outside_reassignment'
         END AS rule
  FROM phased
),
zk_steps AS (
  SELECT *,
         MAX(CASE WHEN phase = 'start' THEN a_leader_epoch END)
           OVER (PARTITION BY cluster_id, coalesce(topic_id, topic), partition ORDER BY seq
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS start_epoch,
         MAX(CASE WHEN phase = 'start' THEN seq END)
           OVER (PARTITION BY cluster_id, coalesce(topic_id, topic), partition ORDER BY seq
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS start_seq
  FROM phased
  WHERE source_kind = 'ZOOKEEPER' AND phase IN ('start', 'complete')
)
SELECT cluster_id, seq, related_seq, rule, 'violated' AS status,
       CAST(NULL AS STRING) AS allowance,
       concat(phase, ': ',
              CASE
                WHEN rule = 'zk_completed_without_leader_epoch_bump'
                  THEN concat('leader epoch > ', CAST(start_epoch AS STRING), ', its value at the start (related seq)')
                WHEN phase = 'start' THEN concat('replicas ', {show({union(b_replicas, a_adding)})}, ', leader ',
                                                 CAST(b_leader AS STRING), ', isr ', {show(b_isr)})
                WHEN phase = 'during' THEN concat('replicas ', {show(b_replicas)}, ', removing ⊆ replicas, ',
                                                  'adding join isr via leader ', CAST(b_leader AS STRING))
                WHEN phase = 'complete' THEN concat('adding ', {show(b_adding)}, ' ⊆ isr, replicas ',
                                                    {show({except(b_replicas, b_removing)})}, ', isr without ',
                                                    {show(b_removing)})
                WHEN phase = 'cancel' THEN concat('replicas ', {show({except(b_replicas, b_adding)})})
                ELSE concat('replicas ⊆ ', {show(b_replicas)})
              END) AS expected,
       concat(topic, '-', CAST(partition AS STRING),
              ' replicas ', {show(b_replicas)}, ' -> ', {show(a_replicas)},
              ', isr ', {show(b_isr)}, ' -> ', {show(a_isr)},
              ', leader ', CAST(b_leader AS STRING), ' -> ', CAST(a_leader AS STRING),
              ', adding ', {show(b_adding)}, ' -> ', {show(a_adding)},
              ', removing ', {show(b_removing)}, ' -> ', {show(a_removing)}) AS actual,
       CAST(1 AS BIGINT) AS magnitude
FROM (
  SELECT cluster_id, seq, CAST(NULL AS BIGINT) AS related_seq, rule, phase, topic, partition, b_replicas, a_replicas,
         b_isr, a_isr, b_leader, a_leader, b_adding, a_adding, b_removing, a_removing, CAST(NULL AS INT) AS start_epoch
  FROM judged WHERE rule IS NOT NULL
  UNION ALL
  SELECT cluster_id, seq, start_seq, 'zk_completed_without_leader_epoch_bump', phase, topic, partition, b_replicas,
         a_replicas, b_isr, a_isr, b_leader, a_leader, b_adding, a_adding, b_removing, a_removing, start_epoch
  FROM zk_steps
  WHERE phase = 'complete' AND a_leader_epoch <= start_epoch
) findings
