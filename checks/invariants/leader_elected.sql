-- L1. Bounded liveness (severity warning): no partition stays without a leader longer than the deadline while
-- a member of its ISR or ELR is live (registered, unfenced, not in controlled shutdown: what every election
-- strategy needs of a clean leader). One obligation per partition (by cluster, topic and partition): owed
-- while its state has leader -1 and one of its ISR or ELR members is live as of the same event. Each
-- partition state lasts until the partition's next change, each broker state until the broker's next change;
-- where a leaderless state and a live member's state overlap, the obligation holds, and overlapping or
-- touching stretches are one obligation (the condition did not lapse at any event between). It opens at the
-- event that made it hold (the partition's change or the member's) and is met at the first event after which
-- it no longer holds (a leader elected, the member fenced or gone, the partition deleted). A broker with no
-- registration in the history is not known live: not judged. Met later than the deadline ({deadline_ms()}
-- ms in this query): violated, at the event that met it, related_seq the one that opened it, magnitude the
-- milliseconds it took; still owed at the end of the history: pending, at the event that opened it,
-- magnitude the milliseconds to the cluster's last event.
WITH states AS (
  SELECT cluster_id, seq, topic, partition, has_after, a_leader, a_isr, a_elr,
         LEAD(seq) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq) AS next_seq
  FROM events
  WHERE kind = 'PartitionChange'
),
leaderless AS (  -- each leaderless state's ISR and ELR members, one row each
  SELECT cluster_id, seq AS p_from, next_seq AS p_to, topic, partition, {explode(a_isr)} AS member
  FROM states WHERE has_after AND a_leader = -1 AND a_isr IS NOT NULL
  UNION ALL
  SELECT cluster_id, seq AS p_from, next_seq AS p_to, topic, partition, {explode(a_elr)} AS member
  FROM states WHERE has_after AND a_leader = -1 AND a_elr IS NOT NULL
),
brokers AS (  -- each broker state until the broker's next change (few rows)
  SELECT cluster_id, seq AS b_from, broker_id AS member,
         LEAD(seq) OVER (PARTITION BY cluster_id, broker_id ORDER BY seq) AS b_to,
         broker_change <> 'UNREGISTERED' AND NOT coalesce(broker_fenced, true)
           AND NOT coalesce(broker_shutdown, false) AS live
  FROM events
  WHERE kind = 'BrokerChange'
),
segments AS (  -- [s_from, s_to): a leaderless state overlapping a live member's state; 2^63 - 1: to the end
  SELECT /*+ BROADCAST(b) */ l.cluster_id, l.topic, l.partition, greatest(l.p_from, b.b_from) AS s_from,
         least(coalesce(l.p_to, 9223372036854775807), coalesce(b.b_to, 9223372036854775807)) AS s_to
  FROM leaderless l
  JOIN brokers b
    ON b.cluster_id = l.cluster_id AND b.member = l.member AND b.live
   AND b.b_from < coalesce(l.p_to, 9223372036854775807) AND coalesce(b.b_to, 9223372036854775807) > l.p_from
),
reach AS (  -- how far the stretches before each one reached
  SELECT *, MAX(s_to) OVER (PARTITION BY cluster_id, topic, partition ORDER BY s_from, s_to
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reached
  FROM segments
),
islands AS (  -- a stretch that starts after all before it ended begins another obligation
  SELECT *, SUM(CASE WHEN reached IS NULL OR s_from > reached THEN 1 ELSE 0 END)
              OVER (PARTITION BY cluster_id, topic, partition ORDER BY s_from, s_to
                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS island
  FROM reach
),
runs AS (
  SELECT cluster_id, topic, partition, MIN(s_from) AS open_seq, MAX(s_to) AS met_seq
  FROM islands
  GROUP BY cluster_id, topic, partition, island
),
timed AS (
  SELECT /*+ BROADCAST(r) */ r.cluster_id, r.topic, r.partition, r.open_seq, r.met_seq, o.event_time_ms AS open_ms,
         m.event_time_ms AS met_ms
  FROM runs r
  JOIN events o ON o.cluster_id = r.cluster_id AND o.seq = r.open_seq
  LEFT JOIN events m ON m.cluster_id = r.cluster_id AND m.seq = r.met_seq
),
ends AS (SELECT cluster_id, MAX(event_time_ms) AS last_ms FROM events WHERE source_kind <> 'REQUEST_LOG'
         GROUP BY cluster_id)
SELECT cluster_id, met_seq AS seq, open_seq AS related_seq, 'no_leader_while_member_live' AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('a leader within ', CAST({deadline_ms()} AS STRING), ' ms while an ISR or ELR member is live') AS expected,
       concat(topic, '-', CAST(partition AS STRING), ': no leader for ', CAST(met_ms - open_ms AS STRING),
              ' ms with a live ISR or ELR member (from the related seq)') AS actual,
       met_ms - open_ms AS magnitude
FROM timed
WHERE met_seq < 9223372036854775807 AND met_ms - open_ms > {deadline_ms()}
UNION ALL
SELECT /*+ BROADCAST(e) */ t.cluster_id, t.open_seq, CAST(NULL AS BIGINT), 'no_leader_while_member_live', 'pending',
       CAST(NULL AS STRING),
       concat('a leader within ', CAST({deadline_ms()} AS STRING), ' ms while an ISR or ELR member is live'),
       concat(t.topic, '-', CAST(t.partition AS STRING),
              ': no leader at the end of the history, with a live ISR or ELR member'),
       e.last_ms - t.open_ms
FROM timed t JOIN ends e ON e.cluster_id = t.cluster_id
WHERE t.met_seq = 9223372036854775807
