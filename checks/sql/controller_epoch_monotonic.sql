-- I1. The controller epoch never goes backwards along seq: neither a ControllerChange's new epoch
-- nor the controller_epoch stamped on any event may be below the highest epoch seen before it.
-- Bootstrap events count towards the running maximum but are not judged (they describe state).
WITH -- A cluster migrated from ZooKeeper to KRaft (KIP-866) has two counters: ZooKeeper's /controller_epoch (the last
-- one the KRaft controller's own claim of /controller) and the KRaft quorum's leader epoch, which starts low. Its
-- history switches at one event, the cutover (services/normalize/migration_offline.py): the first KRaft
-- ControllerChange right after a ZooKeeper event (seq - 1) whose controller is the one that claimed ZooKeeper
-- (previous leader = leader). Each side is judged on its own counter; any other drop is judged as before.
cutover AS (
  SELECT c.cluster_id, MIN(c.seq) AS cut_seq
  FROM events c JOIN events p ON p.cluster_id = c.cluster_id AND p.seq = c.seq - 1
  WHERE c.kind = 'ControllerChange' AND c.source_kind IN ('KRAFT_LOG', 'KRAFT_SNAPSHOT')
    AND c.cc_leader >= 0 AND c.cc_leader = c.cc_prev_leader AND p.source_kind = 'ZOOKEEPER'
  GROUP BY c.cluster_id
),
obs AS (
  SELECT e.cluster_id, e.seq, e.bootstrap, e.kind,
         CASE WHEN e.kind = 'ControllerChange' THEN e.cc_epoch ELSE e.controller_epoch END AS epoch,
         CASE WHEN e.seq >= x.cut_seq THEN 1 ELSE 0 END AS counter
  FROM events e LEFT JOIN cutover x ON x.cluster_id = e.cluster_id
  WHERE (e.kind = 'ControllerChange' AND e.cc_epoch >= 0)
     OR (e.kind <> 'ControllerChange' AND e.controller_epoch >= 0)
),
running AS (
  SELECT cluster_id, seq, bootstrap, kind, epoch,
         MAX(epoch) OVER (PARTITION BY cluster_id, counter ORDER BY seq
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_max,
         LAG(seq) OVER (PARTITION BY cluster_id, counter ORDER BY seq) AS prev_seq
  FROM obs
)
SELECT cluster_id, seq, prev_seq AS related_seq,
       CASE WHEN kind = 'ControllerChange' THEN 'controller_change_epoch_regressed'
            ELSE 'event_controller_epoch_regressed' END AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('controller epoch >= ', CAST(prev_max AS STRING)) AS expected,
       concat('controller epoch ', CAST(epoch AS STRING), ' on ', kind) AS actual,
       CAST(prev_max - epoch AS BIGINT) AS magnitude
FROM running
WHERE NOT bootstrap AND prev_max IS NOT NULL AND epoch < prev_max
