-- I1. The controller epoch never goes backwards along seq: neither a ControllerChange's new epoch
-- nor the controller_epoch stamped on any event may be below the highest epoch seen before it.
-- Bootstrap events count towards the running maximum but are not judged (they describe state).
WITH obs AS (
  SELECT cluster_id, seq, bootstrap, kind,
         CASE WHEN kind = 'ControllerChange' THEN cc_epoch ELSE controller_epoch END AS epoch
  FROM events
  WHERE (kind = 'ControllerChange' AND cc_epoch >= 0)
     OR (kind <> 'ControllerChange' AND controller_epoch >= 0)
),
running AS (
  SELECT cluster_id, seq, bootstrap, kind, epoch,
         MAX(epoch) OVER (PARTITION BY cluster_id ORDER BY seq
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_max,
         LAG(seq) OVER (PARTITION BY cluster_id ORDER BY seq) AS prev_seq
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
