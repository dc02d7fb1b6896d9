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
-- Cost: one window over the PartitionChanges whose payload is the previous event's seq and a digest of
-- its after state (NULL when it left none) (dialect shim `digest`: a 64-bit hash, one narrow column instead of ten
-- wide ones), keyed by a number for the cluster id and partition key (not the two strings); only the
-- rows whose digests differ (breaks: equal states give equal digests) fetch both states by key, to be
-- compared column by column. Capture gaps and topic events are few, so they are
-- matched to the (few) breaks and to the topic id's deletes by joins, not by windows over every event.
WITH pkeys AS (  -- each (cluster id, partition key) with a small integer, the window's key (strings slow its sort)
  SELECT cluster_id, pkey, row_number() OVER (ORDER BY cluster_id, pkey) AS pkey_no
  FROM (SELECT DISTINCT cluster_id, coalesce(topic_id, topic) AS pkey FROM events WHERE kind = 'PartitionChange') k
),
digests AS (  -- narrow rows for the window: both states as digests
  SELECT cluster_id, coalesce(topic_id, topic) AS pkey, partition, seq, bootstrap, has_before,
         {digest(6, b_replicas, b_isr, b_adding, b_removing, b_elr, b_last_known_elr, b_leader, b_leader_epoch,
                 b_partition_epoch, b_recovery)} AS b_digest,
         -- NULL when the change leaves no state (a delete): the window then carries has_after in the digest
         CASE WHEN has_after THEN {digest(6, a_replicas, a_isr, a_adding, a_removing, a_elr, a_last_known_elr,
                                          a_leader, a_leader_epoch, a_partition_epoch, a_recovery)} END AS a_digest
  FROM events
  WHERE kind = 'PartitionChange'
),
paired AS (
  SELECT /*+ BROADCAST(k) */ k.pkey_no, d.seq, d.bootstrap, d.has_before, d.b_digest,
         LAG(d.seq) OVER w AS p_seq, LAG(d.a_digest) OVER w AS p_digest
  FROM digests d JOIN pkeys k ON k.cluster_id = d.cluster_id AND k.pkey IS NOT DISTINCT FROM d.pkey
  WINDOW w AS (PARTITION BY k.pkey_no * 4294967296 + d.partition ORDER BY d.seq)  -- one BIGINT key: fewer sort keys
),
candidates AS (
  SELECT /*+ BROADCAST(c) */ c.cluster_id, p.seq, p.p_seq, p.p_digest IS NOT NULL AS p_has_after  -- a digest is never NULL
  FROM paired p JOIN pkeys c ON c.pkey_no = p.pkey_no
  WHERE NOT p.bootstrap AND p.has_before AND p.p_seq IS NOT NULL
    AND (p.p_digest IS NULL OR p.b_digest IS DISTINCT FROM p.p_digest)
),
-- The breaks are few and the events many: the breaks fetch their two states by key, one join each. The
-- BROADCAST hints (Spark's; a comment to DuckDB, whose planner builds on the small side by itself) keep Spark
-- from shuffling every event for a join whose other side it cannot know to be small before it runs.
fetched AS (  -- the change's before
  SELECT /*+ BROADCAST(c) */ c.cluster_id, c.seq, c.p_seq, c.p_has_after, e.topic, e.partition,
         e.b_replicas, e.b_isr, e.b_adding, e.b_removing, e.b_elr, e.b_last_known_elr, e.b_leader, e.b_leader_epoch,
         e.b_partition_epoch, e.b_recovery
  FROM candidates c JOIN events e ON e.cluster_id = c.cluster_id AND e.seq = c.seq
),
compared AS (  -- ... and the previous change's after
  SELECT /*+ BROADCAST(e) */ e.cluster_id, e.seq, e.p_seq, e.p_has_after, e.topic, e.partition,
         e.b_replicas, e.b_isr, e.b_adding, e.b_removing, e.b_elr, e.b_leader, e.b_leader_epoch,
         e.b_partition_epoch, e.b_recovery,
         p.a_replicas AS p_replicas, p.a_isr AS p_isr, p.a_adding AS p_adding, p.a_removing AS p_removing,
         p.a_elr AS p_elr, p.a_leader AS p_leader, p.a_leader_epoch AS p_leader_epoch,
         p.a_partition_epoch AS p_partition_epoch, p.a_recovery AS p_recovery,
         CASE WHEN NOT e.p_has_after THEN 10 ELSE
           (CASE WHEN e.b_replicas IS DISTINCT FROM p.a_replicas THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_isr IS DISTINCT FROM p.a_isr THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_adding IS DISTINCT FROM p.a_adding THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_removing IS DISTINCT FROM p.a_removing THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_elr IS DISTINCT FROM p.a_elr THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_last_known_elr IS DISTINCT FROM p.a_last_known_elr THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_leader IS DISTINCT FROM p.a_leader THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_leader_epoch IS DISTINCT FROM p.a_leader_epoch THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_partition_epoch IS DISTINCT FROM p.a_partition_epoch THEN 1 ELSE 0 END)
         + (CASE WHEN e.b_recovery IS DISTINCT FROM p.a_recovery THEN 1 ELSE 0 END) END AS n_diff
  FROM fetched e JOIN events p ON p.cluster_id = e.cluster_id AND p.seq = e.p_seq
),
breaks AS (
  SELECT cluster_id, seq, p_seq,
         CASE WHEN NOT p_has_after THEN 'before_of_deleted_partition' ELSE 'before_differs_from_previous_after' END AS rule,
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
         n_diff
  FROM compared
  WHERE n_diff > 0
),
gap_seqs AS (
  -- a request log's lines not read (source REQUEST_LOG) leave who asked unknown, not the state
  SELECT cluster_id, seq FROM events WHERE kind = 'CaptureGap' AND source_kind <> 'REQUEST_LOG'
),
breaks_judged AS (  -- few rows on either side: a plain range join
  SELECT /*+ BROADCAST(g) */ b.cluster_id, b.seq, b.p_seq, b.rule, b.expected, b.actual, b.n_diff,
         MAX(CASE WHEN g.seq IS NULL THEN 0 ELSE 1 END) = 1 AS after_gap
  FROM breaks b LEFT JOIN gap_seqs g ON g.cluster_id = b.cluster_id AND g.seq > b.p_seq AND g.seq < b.seq
  GROUP BY b.cluster_id, b.seq, b.p_seq, b.rule, b.expected, b.actual, b.n_diff
),
topic_events AS (
  SELECT cluster_id, seq, topic_id, topic_change,
         LEAD(seq) OVER (PARTITION BY cluster_id, topic_id ORDER BY seq) AS next_seq
  FROM events WHERE kind = 'TopicChange' AND topic_id IS NOT NULL
),
first_topic AS (
  SELECT cluster_id, MIN(seq) AS first_topic_seq FROM events WHERE kind = 'TopicChange' GROUP BY cluster_id
),
first_of_id AS (
  SELECT cluster_id, topic_id, MIN(seq) AS first_seq FROM topic_events GROUP BY cluster_id, topic_id
),
judged_changes AS (  -- narrow (the topic names and partitions are fetched for the findings only)
  SELECT /*+ BROADCAST(f) */ p.cluster_id, p.seq, p.topic_id
  FROM events p JOIN first_topic f ON p.cluster_id = f.cluster_id
  -- one CASE, not four conditions: DuckDB estimates each condition keeps a fifth of the rows, then takes
  -- these 6.7M changes (at 10M) for the smaller side of the joins below and builds their hash tables on them
  WHERE p.kind = 'PartitionChange'
    AND CASE WHEN p.topic_id IS NOT NULL AND p.has_after AND NOT p.bootstrap AND f.first_topic_seq < p.seq
             THEN 1 ELSE 0 END = 1
),
no_live_topic AS (
  -- no event of the topic id before the change
  SELECT /*+ BROADCAST(x) */ x.cluster_id, x.seq, e.topic, x.topic_id, e.partition, x.topic_seq, x.why
  FROM (
    SELECT /*+ BROADCAST(i) */ c.cluster_id, c.seq, c.topic_id, CAST(NULL AS BIGINT) AS topic_seq, 'never created' AS why
    FROM judged_changes c LEFT JOIN first_of_id i ON i.cluster_id = c.cluster_id AND i.topic_id = c.topic_id
    WHERE i.first_seq IS NULL OR i.first_seq > c.seq
    UNION ALL
    -- the id's last topic event before the change deleted it
    SELECT /*+ BROADCAST(d) */ c.cluster_id, c.seq, c.topic_id, d.seq, 'deleted'
    FROM judged_changes c JOIN topic_events d
      ON d.cluster_id = c.cluster_id AND d.topic_id = c.topic_id AND d.topic_change = 'DELETED'
         AND d.seq < c.seq AND (d.next_seq IS NULL OR c.seq < d.next_seq)
  ) x JOIN events e ON e.cluster_id = x.cluster_id AND e.seq = x.seq
),
no_live_judged AS (  -- few rows on either side: a plain range join
  SELECT /*+ BROADCAST(g) */ n.cluster_id, n.seq, n.topic, n.topic_id, n.partition, n.topic_seq, n.why,
         MAX(CASE WHEN g.seq IS NULL THEN 0 ELSE 1 END) = 1 AS after_gap
  FROM no_live_topic n LEFT JOIN gap_seqs g
    ON g.cluster_id = n.cluster_id AND g.seq < n.seq AND (n.topic_seq IS NULL OR g.seq > n.topic_seq)
  GROUP BY n.cluster_id, n.seq, n.topic, n.topic_id, n.partition, n.topic_seq, n.why
)
SELECT cluster_id, seq, p_seq AS related_seq, rule,
       CASE WHEN after_gap THEN 'allowed' ELSE 'violated' END AS status,
       CASE WHEN after_gap THEN 'capture gap between the two events' END AS allowance,
       expected, actual, CAST(n_diff AS BIGINT) AS magnitude
FROM breaks_judged
UNION ALL
SELECT cluster_id, seq, topic_seq, 'partition_change_without_live_topic',
       CASE WHEN after_gap THEN 'allowed' ELSE 'violated' END,
       CASE WHEN after_gap THEN 'capture gap before the change (the topic creation may be lost)' END,
       concat('topic ', topic, ' (id ', topic_id, ') created and not deleted before the change'),
       concat(topic, '-', CAST(partition AS STRING), ' under topic id ', topic_id, ': ', why,
              CASE WHEN topic_seq IS NULL THEN '' ELSE concat(' at seq ', CAST(topic_seq AS STRING)) END),
       CAST(1 AS BIGINT)
FROM no_live_judged
