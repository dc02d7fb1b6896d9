-- I1. The controller epoch never goes backwards along seq: neither a ControllerChange's new epoch
-- nor the controller_epoch stamped on any event may be below the highest epoch seen before it.
-- Bootstrap events count towards the running maximum but are not judged (they describe state).
-- A cluster migrated from ZooKeeper to KRaft (KIP-866) has two controller-epoch counters, ZooKeeper's
-- and the KRaft quorum's, switching at the cutover (checks/invariants/fragments/migration_cutover.sql). Each side
-- is judged on its own counter; any other drop is judged as before.
WITH cutover AS ({include(migration_cutover)}),
-- obs is a scan (the cutover is one row per migrated cluster), read four times: each reader scans the events
-- again rather than the engine keeping every event's epoch (5.8 GB at 100M events of one cluster).
obs AS {recomputed()}(
  SELECT /*+ BROADCAST(x) */ e.cluster_id, e.seq, e.bootstrap, e.kind,
         CASE WHEN e.kind = 'ControllerChange' THEN e.cc_epoch ELSE e.controller_epoch END AS epoch,
         CASE WHEN e.seq >= x.cut_seq THEN 1 ELSE 0 END AS counter
  FROM events e LEFT JOIN cutover x ON x.cluster_id = e.cluster_id
  WHERE (e.kind = 'ControllerChange' AND e.cc_epoch >= 0)
     OR (e.kind <> 'ControllerChange' AND e.controller_epoch >= 0)
),
-- Cost: no window over the events (one cluster is one window partition: a single-threaded sort of every
-- event). A row is below the running maximum exactly when a higher epoch first appeared before it, so
-- each epoch value's first seq (few values) gives, per value, the first seq of any higher one, and
-- rows are met with it by an equality join on the value. Only those (few) rows look up the maximum and
-- the seq of the rows before them: over the 1024-seq buckets before theirs (a running maximum over the
-- buckets) and over the rows of their own bucket before them.
firsts AS (  -- each epoch value of a counter with the seq it first appears at
  SELECT cluster_id, counter, epoch, MIN(seq) AS first_seq FROM obs GROUP BY cluster_id, counter, epoch
),
thresholds AS (  -- ... and the first seq at which a higher value appeared
  SELECT cluster_id, counter, epoch,
         MIN(first_seq) OVER (PARTITION BY cluster_id, counter ORDER BY epoch DESC
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS higher_seq
  FROM firsts
),
regressed AS (
  SELECT /*+ BROADCAST(t) */ o.cluster_id, o.seq, o.kind, o.epoch, o.counter, CAST(FLOOR(o.seq / 1024) AS BIGINT) AS bucket
  FROM obs o JOIN thresholds t ON t.cluster_id = o.cluster_id AND t.counter = o.counter AND t.epoch = o.epoch
  WHERE NOT o.bootstrap AND o.seq > t.higher_seq
),
buckets AS (  -- per bucket: the highest epoch and seq of the counter's rows in the buckets before it
  SELECT cluster_id, counter, bucket,
         MAX(max_epoch) OVER w AS before_epoch, MAX(max_seq) OVER w AS before_seq
  FROM (SELECT cluster_id, counter, CAST(FLOOR(seq / 1024) AS BIGINT) AS bucket,
               MAX(epoch) AS max_epoch, MAX(seq) AS max_seq
        FROM obs GROUP BY cluster_id, counter, CAST(FLOOR(seq / 1024) AS BIGINT)) b
  WINDOW w AS (PARTITION BY cluster_id, counter ORDER BY bucket ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
regressed_buckets AS (  -- their buckets: at most one per 1024 events, however many rows regressed
  SELECT DISTINCT cluster_id, counter, bucket FROM regressed
),
within AS (  -- ... and in its own bucket before the row; the events of those buckets only are met with them
  -- (a broadcast: none in a sound history), not every event sorted for a join with none
  SELECT r.cluster_id, r.seq, MAX(o.epoch) AS in_epoch, MAX(o.seq) AS in_seq
  FROM regressed r
  JOIN (SELECT /*+ BROADCAST(k) */ o.cluster_id, o.counter, o.seq, o.epoch, k.bucket
        FROM obs o JOIN regressed_buckets k
          ON o.cluster_id = k.cluster_id AND o.counter = k.counter AND CAST(FLOOR(o.seq / 1024) AS BIGINT) = k.bucket) o
    ON o.cluster_id = r.cluster_id AND o.counter = r.counter AND o.bucket = r.bucket AND o.seq < r.seq
  GROUP BY r.cluster_id, r.seq
),
running AS (
  SELECT /*+ BROADCAST(b) */ r.cluster_id, r.seq, r.kind, r.epoch,
         CASE WHEN w.in_epoch IS NULL OR b.before_epoch > w.in_epoch THEN b.before_epoch ELSE w.in_epoch END AS prev_max,
         CASE WHEN w.in_seq IS NULL THEN b.before_seq ELSE w.in_seq END AS prev_seq
  FROM regressed r
  JOIN buckets b ON b.cluster_id = r.cluster_id AND b.counter = r.counter AND b.bucket = r.bucket
  LEFT JOIN within w ON w.cluster_id = r.cluster_id AND w.seq = r.seq
)
SELECT cluster_id, seq, prev_seq AS related_seq,
       CASE WHEN kind = 'ControllerChange' THEN 'controller_change_epoch_regressed'
            ELSE 'event_controller_epoch_regressed' END AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('controller epoch >= ', CAST(prev_max AS STRING)) AS expected,
       concat('controller epoch ', CAST(epoch AS STRING), ' on ', kind) AS actual,
       CAST(prev_max - epoch AS BIGINT) AS magnitude
FROM running
