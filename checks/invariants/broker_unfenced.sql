-- L3. Bounded liveness (severity warning): a broker registered or fenced is unfenced or unregistered within
-- the deadline. One obligation per broker (by cluster and broker id): owed from the BrokerChange that leaves it
-- registered and fenced (a KRaft registration, a fence) to the first that leaves it unfenced (in controlled
-- shutdown or not) or unregistered. ZooKeeper mode registers brokers live (no fenced state): nothing is owed
-- there. Met later than the deadline ({deadline_ms()} ms in this query): violated, at the change that met it,
-- related_seq the one that opened it, magnitude the milliseconds it took; still owed at the end of the
-- history: pending, at the change that opened it, magnitude the milliseconds to the cluster's last event.
WITH steps AS (
  SELECT cluster_id, seq, broker_id, event_time_ms,
         coalesce(broker_change <> 'UNREGISTERED' AND broker_fenced, false) AS owed
  FROM events
  WHERE kind = 'BrokerChange'
),
edges AS (
  SELECT * FROM (
    SELECT *, LAG(owed) OVER (PARTITION BY cluster_id, broker_id ORDER BY seq) AS was_owed FROM steps
  ) s
  WHERE owed <> coalesce(was_owed, false)
),
runs AS (
  SELECT cluster_id, broker_id, owed, seq AS open_seq, event_time_ms AS open_ms,
         LEAD(seq) OVER (PARTITION BY cluster_id, broker_id ORDER BY seq) AS met_seq,
         LEAD(event_time_ms) OVER (PARTITION BY cluster_id, broker_id ORDER BY seq) AS met_ms
  FROM edges
),
{include(overdue)}
SELECT cluster_id, seq, related_seq, 'broker_still_fenced' AS rule, status, CAST(NULL AS STRING) AS allowance,
       concat('unfenced or unregistered within ', CAST({deadline_ms()} AS STRING), ' ms') AS expected,
       concat('broker ', CAST(broker_id AS STRING),
              CASE WHEN status = 'violated' THEN concat(': fenced for ', CAST(magnitude AS STRING), ' ms (from the related seq)')
                   ELSE ': still fenced at the end of the history' END) AS actual,
       magnitude
FROM overdue
