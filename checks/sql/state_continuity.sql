-- Continuity. Each PartitionChange's `before` equals the `after` of the previous PartitionChange of
-- the same partition; a break means a lost (or forged) event. Bootstrap events are exempt (they
-- re-describe state), and so is the first event seen of a partition. A CaptureGap anywhere in the
-- cluster between the two events makes the break 'allowed (capture gap)'.
-- A partition is keyed by its topic id (the name where a source has none): after a delete and a
-- re-create, a write under the old id continues the old, deleted incarnation.
-- Live topic: a PartitionChange that leaves a state (creates included, bootstrap states not) needs its
-- topic id created and not deleted before it. Judged once the history has shown a topic event (a
-- snapshot lists topics before partitions); allowed when a capture gap lies after the id's last topic
-- event (or, with none, anywhere before), where the creation may have been lost.
WITH ordered AS (
  SELECT cluster_id, seq, kind, topic, coalesce(topic_id, topic) AS tkey, partition, bootstrap, has_before, has_after,
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
  WINDOW w AS (PARTITION BY cluster_id, tkey, partition ORDER BY seq)
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
),
topic_stream AS (
  SELECT cluster_id, seq, topic, topic_id, partition, 1 AS is_topic, topic_change,
         CAST(NULL AS BOOLEAN) AS bootstrap, CAST(NULL AS BOOLEAN) AS has_after
  FROM events WHERE kind = 'TopicChange' AND topic_id IS NOT NULL
  UNION ALL
  SELECT cluster_id, seq, topic, topic_id, partition, 0, CAST(NULL AS STRING), bootstrap, has_after
  FROM events WHERE kind = 'PartitionChange' AND topic_id IS NOT NULL
),
topic_versioned AS (
  SELECT *, SUM(is_topic) OVER (PARTITION BY cluster_id, topic_id ORDER BY seq
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS version
  FROM topic_stream
),
topic_as_of AS (
  SELECT *,
         FIRST_VALUE(topic_change) OVER (PARTITION BY cluster_id, topic_id, version ORDER BY seq
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS topic_state,
         FIRST_VALUE(seq) OVER (PARTITION BY cluster_id, topic_id, version ORDER BY seq
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS topic_seq
  FROM topic_versioned
),
gap_seqs AS (
  SELECT cluster_id, seq FROM events WHERE kind = 'CaptureGap'
),
first_topic AS (
  SELECT cluster_id, MIN(seq) AS first_topic_seq FROM events WHERE kind = 'TopicChange' GROUP BY cluster_id
),
no_live_topic AS (
  SELECT a.cluster_id, a.seq, a.topic, a.topic_id, a.partition,
         CASE WHEN a.version = 0 THEN CAST(NULL AS BIGINT) ELSE a.topic_seq END AS topic_seq,
         CASE WHEN a.version = 0 THEN 'never created' ELSE 'deleted' END AS why
  FROM topic_as_of a JOIN first_topic f ON a.cluster_id = f.cluster_id
  WHERE a.is_topic = 0 AND a.has_after AND NOT a.bootstrap AND f.first_topic_seq < a.seq
    AND (a.version = 0 OR a.topic_state = 'DELETED')
),
no_live_judged AS (  -- few rows on either side: a plain range join
  SELECT n.cluster_id, n.seq, n.topic, n.topic_id, n.partition, n.topic_seq, n.why,
         MAX(CASE WHEN g.seq IS NULL THEN 0 ELSE 1 END) = 1 AS after_gap
  FROM no_live_topic n LEFT JOIN gap_seqs g
    ON g.cluster_id = n.cluster_id AND g.seq < n.seq AND (n.topic_seq IS NULL OR g.seq > n.topic_seq)
  GROUP BY n.cluster_id, n.seq, n.topic, n.topic_id, n.partition, n.topic_seq, n.why
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
UNION ALL
SELECT cluster_id, seq, topic_seq, 'partition_change_without_live_topic',
       CASE WHEN after_gap THEN 'allowed' ELSE 'violated' END,
       CASE WHEN after_gap THEN 'capture gap before the change (the topic creation may be lost)' END,
       concat('topic ', topic, ' (id ', topic_id, ') created and not deleted before the change'),
       concat(topic, '-', CAST(partition AS STRING), ' under topic id ', topic_id, ': ', why,
              CASE WHEN topic_seq IS NULL THEN '' ELSE concat(' at seq ', CAST(topic_seq AS STRING)) END),
       CAST(1 AS BIGINT)
FROM no_live_judged
