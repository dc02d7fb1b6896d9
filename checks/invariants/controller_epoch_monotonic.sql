-- I1. The controller epoch never goes backwards along seq: neither a ControllerChange's new epoch
-- nor the controller_epoch stamped on any event may be below the highest epoch seen before it.
-- Bootstrap events count towards the running maximum but are not judged (they describe state).
-- A cluster migrated from ZooKeeper to KRaft (KIP-866) has two controller-epoch counters, ZooKeeper's
-- and the KRaft quorum's, switching at the cutover (checks/invariants/fragments/migration_cutover.sql). Each side
-- is judged on its own counter; any other drop is judged as before.
WITH cutover AS ({include(migration_cutover)}),
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
