-- A bounded-liveness obligation's findings: the CTE `runs` comes first, one row per edge of a run where the
-- obligation opens (owed) or is met, with open_seq, open_ms (the step that opened it), met_seq and met_ms (the
-- next edge's, NULL when there is none). `overdue` gives runs' columns and seq, related_seq, status and
-- magnitude: met later than the deadline, violated, at the step that met it, related_seq the one that opened
-- it, magnitude the milliseconds it took; still owed at the end of the history, pending, at the step that
-- opened it, magnitude the milliseconds to the cluster's last event (its requests aside: `import requests`
-- appends them, at their own times, after the history; they say nothing of the controller). Included (checks/catalog.py) as CTEs by
-- reassignment_completes, broker_unfenced and replication_progress.
ends AS (SELECT cluster_id, MAX(event_time_ms) AS last_ms FROM events WHERE source_kind <> 'REQUEST_LOG'
         GROUP BY cluster_id),
overdue AS (
  SELECT *, met_seq AS seq, open_seq AS related_seq, 'violated' AS status, met_ms - open_ms AS magnitude
  FROM runs
  WHERE owed AND met_seq IS NOT NULL AND met_ms - open_ms > {deadline_ms()}
  UNION ALL
  SELECT /*+ BROADCAST(e) */ r.*, r.open_seq, CAST(NULL AS BIGINT), 'pending', e.last_ms - r.open_ms
  FROM runs r JOIN ends e ON e.cluster_id = r.cluster_id
  WHERE r.owed AND r.met_seq IS NULL
)
