-- L5. Bounded liveness (severity warning): the metadata log has no stretch longer than the deadline without
-- a record: the active controller writes a NoOpRecord every metadata.max.idle.interval.ms when nothing else is
-- written, so a longer stretch is one with no working controller. The capture keeps no event of a NoOp (nor of
-- ACL, quota, producer-id records), so a stretch is judged only between two consecutive events of the log
-- (KRaft log records, or a simulated one: offset samples and snapshots are not log records) whose offsets are
-- adjacent or equal: nothing at all was written between them, and the event times (the batches' append
-- times) bound the silence. Where offsets lie between, records of unknown time were written: not judged.
-- Longer than the deadline ({deadline_ms()} ms in this query): violated, at the later event, related_seq the
-- earlier, magnitude the milliseconds between. A cluster whose history has no event of a metadata log
-- (ZooKeeper mode) is `no data`, at its first event: no record here says whether its controller was working.
WITH log AS (
  SELECT cluster_id, seq, source_offset, event_time_ms,
         LAG(seq) OVER (PARTITION BY cluster_id, source_kind ORDER BY seq) AS prev_seq,
         LAG(source_offset) OVER (PARTITION BY cluster_id, source_kind ORDER BY seq) AS prev_offset,
         LAG(event_time_ms) OVER (PARTITION BY cluster_id, source_kind ORDER BY seq) AS prev_ms
  FROM events
  WHERE source_kind IN ('KRAFT_LOG', 'SIMULATOR') AND kind <> 'OffsetSample' AND NOT coalesce(bootstrap, false)
)
SELECT cluster_id, seq, prev_seq AS related_seq, 'metadata_log_silent' AS rule, 'violated' AS status,
       CAST(NULL AS STRING) AS allowance,
       concat('a metadata record within ', CAST({deadline_ms()} AS STRING), ' ms of the one before') AS expected,
       concat('nothing written between offsets ', CAST(prev_offset AS STRING), ' and ', CAST(source_offset AS STRING),
              ' for ', CAST(event_time_ms - prev_ms AS STRING), ' ms') AS actual,
       event_time_ms - prev_ms AS magnitude
FROM log
WHERE source_offset - prev_offset BETWEEN 0 AND 1 AND event_time_ms - prev_ms > {deadline_ms()}
UNION ALL
SELECT cluster_id, MIN(seq), CAST(NULL AS BIGINT), 'no_metadata_log', 'no data', CAST(NULL AS STRING),
       'events of a KRaft metadata log', 'none: the history says nothing of the controller between its writes',
       CAST(NULL AS BIGINT)
FROM events
GROUP BY cluster_id
HAVING SUM(CASE WHEN source_kind IN ('KRAFT_LOG', 'SIMULATOR') AND kind <> 'OffsetSample'
                     AND NOT coalesce(bootstrap, false) THEN 1 ELSE 0 END) = 0
