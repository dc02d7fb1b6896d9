-- I2 (ElectionSafety). At most one controller per controller epoch. Observations: each
-- ControllerChange (new leader, new epoch) and the (controller_id, controller_epoch) stamped on
-- every other non-bootstrap event. One violation per extra controller seen in an epoch, at the first
-- event that shows it; related_seq is the first event of the epoch's first controller.
-- A cluster migrated from ZooKeeper to KRaft (KIP-866) has two controller-epoch counters, ZooKeeper's
-- and the KRaft quorum's, switching at the cutover (checks/invariants/fragments/migration_cutover.sql). An epoch
-- of one counter is not the same epoch of the other.
WITH cutover AS ({include(migration_cutover)}),
all_obs AS (
  SELECT cluster_id, seq, cc_epoch AS epoch, cc_leader AS leader
  FROM events
  WHERE kind = 'ControllerChange' AND NOT bootstrap AND cc_epoch >= 0 AND cc_leader >= 0
  UNION ALL
  SELECT cluster_id, seq, controller_epoch AS epoch, controller_id AS leader
  FROM events
  WHERE kind <> 'ControllerChange' AND NOT bootstrap AND controller_epoch >= 0 AND controller_id >= 0
),
obs AS (
  SELECT /*+ BROADCAST(x) */ o.cluster_id, o.seq, o.epoch, o.leader, CASE WHEN o.seq >= x.cut_seq THEN 1 ELSE 0 END AS counter
  FROM all_obs o LEFT JOIN cutover x ON x.cluster_id = o.cluster_id
),
per_leader AS (
  SELECT cluster_id, counter, epoch, leader, MIN(seq) AS seq, COUNT(*) AS n
  FROM obs GROUP BY cluster_id, counter, epoch, leader
),
ranked AS (
  SELECT cluster_id, epoch, leader, seq, n,
         ROW_NUMBER() OVER (PARTITION BY cluster_id, counter, epoch ORDER BY seq) AS rn,
         FIRST_VALUE(leader) OVER (PARTITION BY cluster_id, counter, epoch ORDER BY seq
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS first_leader,
         FIRST_VALUE(seq) OVER (PARTITION BY cluster_id, counter, epoch ORDER BY seq
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS first_seq
  FROM per_leader
)
SELECT cluster_id, seq, first_seq AS related_seq, 'two_controllers_in_one_epoch' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('only controller ', CAST(first_leader AS STRING), ' in epoch ', CAST(epoch AS STRING)) AS expected,
       concat('controller ', CAST(leader AS STRING), ' in epoch ', CAST(epoch AS STRING),
              ' (', CAST(n AS STRING), ' events)') AS actual,
       CAST(n AS BIGINT) AS magnitude
FROM ranked
WHERE rn > 1
