-- L2. Bounded liveness (severity warning): a reassignment completes or is cancelled within the deadline.
-- One obligation per partition (by cluster, topic and partition): owed from the change that leaves it with
-- adding or removing replicas to the first change that leaves it with neither (a completion, a cancel, the
-- partition deleted). Met later than the deadline (event time of the change that met it minus that of the one
-- that opened it; {deadline_ms()} ms in this query): violated, at the change that met it, related_seq the one
-- that opened it, magnitude the milliseconds it took. Still owed at the end of the history: pending, at the
-- change that opened it, magnitude the milliseconds from it to the cluster's last event (what comes after is
-- not known: never a violation). Unknown event times judge nothing.
WITH steps AS (
  SELECT cluster_id, seq, topic, partition, event_time_ms, a_adding, a_removing,
         coalesce(has_after AND ({size(a_adding)} > 0 OR {size(a_removing)} > 0), false) AS owed
  FROM events
  WHERE kind = 'PartitionChange'
),
edges AS (  -- the changes where the obligation opens or is met
  SELECT * FROM (
    SELECT *, LAG(owed) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq) AS was_owed FROM steps
  ) s
  WHERE owed <> coalesce(was_owed, false)
),
runs AS (
  SELECT cluster_id, topic, partition, owed, seq AS open_seq, event_time_ms AS open_ms, a_adding, a_removing,
         LEAD(seq) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq) AS met_seq,
         LEAD(event_time_ms) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq) AS met_ms
  FROM edges
),
{include(overdue)}
SELECT cluster_id, seq, related_seq, 'reassignment_not_ended' AS rule, status, CAST(NULL AS STRING) AS allowance,
       concat('completed or cancelled within ', CAST({deadline_ms()} AS STRING), ' ms') AS expected,
       concat(topic, '-', CAST(partition AS STRING), ' adding ', {show(a_adding)}, ' removing ', {show(a_removing)},
              CASE WHEN status = 'violated' THEN concat(': ended ', CAST(magnitude AS STRING), ' ms after it began (related seq)')
                   ELSE ': still reassigning at the end of the history' END) AS actual,
       magnitude
FROM overdue
