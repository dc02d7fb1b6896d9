-- I7 (ValidControllerState, KIP-841/903). A fenced or unregistered broker is never leader or in an ISR,
-- and a broker in controlled shutdown never becomes leader or joins an ISR (KIP-841: it is not an
-- eligible replica; KRaft moves its leaderships away and takes it out of the ISRs when it enters
-- controlled shutdown). Two ways to break it:
--  (a) a PartitionChange makes such a broker leader or adds it to the ISR (judged for brokers that
--      join the ISR or become leader at this change, an ISR member elected leader included; all
--      members for creates and bootstrap states), with the broker's
--      state as of that change. A broker with no registration at all counts as unregistered once the
--      history has shown any broker registration (snapshots list brokers before partitions).
--  (b) a broker is fenced or unregistered (not in a bootstrap) while some partition's state as of
--      that moment still has it as leader or in the ISR. Kafka writes the PartitionChanges that
--      remove it before the fence record, so a correct history never shows this.
-- Legal exception (KRaft before ELR): when the last ISR member's broker goes away, the partition keeps
-- it as its only ISR member with leader -1 ("last replica standing"); such states are not judged, but
-- only when that member was in the ISR before (or the state is a bootstrap): a broker that was not in
-- the ISR does not become its last member.
-- (b) is about fencing: a broker entering controlled shutdown is still leader and in ISRs at that
-- record (KRaft writes the moves after it), so only fenced and unregistered states end membership.
-- (b) is KRaft's order only: in ZooKeeper mode a broker's /brokers/ids znode goes first (its session
-- ended), and the controller moves its leaderships and ISR memberships after it
-- (KafkaController.onBrokerFailure), so ZooKeeper-sourced broker changes are not judged by (b).
-- Known anomaly (allowed): a new incarnation's registration (fenced) while the broker is still leader
-- or in ISRs, at a metadata.version below 4.0-IV1 (23) or unknown. Kafka removes a re-registering
-- broker from the ISRs and ELRs first (the records come before the RegisterBrokerRecord) only when
-- the metadata.version supports ELR: ReplicationControlManager.handleBrokerUncleanShutdown returns at
-- once otherwise (KAFKA-15586, KIP-966 clean shutdown detection). On Kafka 3.9 every broker that
-- comes back after an unclean shutdown of the whole cluster shows it; from 4.0-IV1 it is a bug.
-- Broker changes and fences are few, partition states many: a state is looked up as of a broker's
-- changes by joins on the broker with a seq range (small build side), not by windows over every state.
WITH topics AS ({include(topic_numbers)}),
brokers AS (
  SELECT cluster_id, seq, broker_id AS broker, bootstrap, broker_change, metadata_version, source_kind,
         CASE WHEN broker_change = 'UNREGISTERED' OR broker_fenced IS NULL THEN 'unregistered'
              WHEN broker_fenced THEN 'fenced' WHEN broker_shutdown THEN 'shutting_down' ELSE 'active' END AS state
  FROM events WHERE kind = 'BrokerChange'
),
-- Read again by each of its two readers, not kept: at 100M events a kept copy of the 66.6M states with their
-- lists took the memory the states' window below needed, which then spilled 2.2 GB (the query alone: 58.9 s
-- with the copy, 37.6 s without).
pc AS {recomputed()}(
  SELECT cluster_id, seq, topic, partition, bootstrap, has_before, has_after,
         b_isr, b_leader, a_isr, a_leader
  FROM events WHERE kind = 'PartitionChange'
),
joiners AS (  -- (a) brokers that join the ISR or become leader; a broker may come twice (the final DISTINCT).
  -- Only those are exploded (ISR members not in the ISR before, the leader if it changed), not every member
  -- of every state (14M rows at 10M events) filtered after. The states judged are chosen inside the explode
  -- (no list, no row), not by a WHERE: DuckDB then estimates these rows as many as the states, and builds
  -- joined_bad's join on the bad broker versions; with a WHERE it took them for the smaller side and built
  -- its hash table on 47.7M joiners at 100M events.
  SELECT cluster_id, seq, topic, partition, a_leader, a_isr,
         {explode(CASE WHEN has_after AND NOT (a_leader = -1 AND {size(a_isr)} <= 1
                                               AND (bootstrap OR (has_before AND {subset(a_isr, b_isr)})))
                       THEN CASE WHEN bootstrap OR NOT has_before THEN {concat(a_isr, {list1(a_leader)})}
                                 ELSE {concat({not_in(a_isr, b_isr)}, {not_in({list1(a_leader)}, {list1(b_leader)})})} END
                  END)} AS broker
  FROM pc
),
broker_versions AS (  -- each broker state with the seq of the broker's next one (few rows)
  SELECT cluster_id, seq, broker, state,
         LEAD(seq) OVER (PARTITION BY cluster_id, broker ORDER BY seq) AS next_seq
  FROM brokers
),
first_of_broker AS (
  SELECT cluster_id, broker, MIN(seq) AS first_seq FROM brokers GROUP BY cluster_id, broker
),
registry AS (
  SELECT cluster_id, MIN(seq) AS first_broker_seq FROM brokers GROUP BY cluster_id
),
-- Ineligible broker states, one row per 65536-seq bucket they span: a change meets the states of its
-- broker in its own bucket only (an equality join), not every state of the broker.
bad_versions AS (
  SELECT cluster_id, broker, seq, next_seq, state, {explode_range(first_bucket, last_bucket)} AS bucket
  FROM (SELECT /*+ BROADCAST(m) */ v.cluster_id, v.broker, v.seq, v.next_seq, v.state,
               CAST(FLOOR(v.seq / 65536) AS BIGINT) AS first_bucket,
               CAST(FLOOR(coalesce(v.next_seq, m.last_seq) / 65536) AS BIGINT) AS last_bucket
        FROM broker_versions v JOIN (SELECT cluster_id, MAX(seq) AS last_seq FROM pc GROUP BY cluster_id) m
          ON m.cluster_id = v.cluster_id
        WHERE v.state IN ('fenced', 'unregistered', 'shutting_down')) x
),
joined_bad AS (
  -- the broker's state as of the change (its last broker change before it) is not eligible, or it has
  -- no broker change before it although the history has shown one of some broker
  SELECT /*+ BROADCAST(r, f, v) */ j.cluster_id, j.seq, j.broker, j.topic, j.partition AS part, j.a_leader, j.a_isr,
         CASE WHEN v.seq IS NULL THEN 'unregistered' ELSE v.state END AS eff_state, v.seq AS state_seq
  FROM joiners j JOIN registry r ON j.cluster_id = r.cluster_id
       LEFT JOIN first_of_broker f ON f.cluster_id = j.cluster_id AND f.broker = j.broker
       LEFT JOIN bad_versions v
         ON v.cluster_id = j.cluster_id AND v.broker = j.broker AND v.bucket = CAST(FLOOR(j.seq / 65536) AS BIGINT)
            AND v.seq < j.seq AND (v.next_seq IS NULL OR j.seq < v.next_seq)
  WHERE j.broker >= 0
    AND ((r.first_broker_seq < j.seq AND (f.first_seq IS NULL OR f.first_seq > j.seq)) OR v.seq IS NOT NULL)
),
-- (b) a partition state [seq, end) lists its leader and ISR members; it ends at the partition's next
-- change or at its topic's delete. Fences are few, member states many (14M at 10M events), and in a
-- correct history no member state holds a fence of its broker. So each member state first meets only
-- the next fence of its broker after the state begins (an equality join on (cluster, broker, 65536-seq
-- bucket): the seqs between two fences of a broker share the second as their next one); the few whose
-- next fence comes before the state ends are then matched to every fence of the broker they hold.
clusters AS (  -- a number per cluster (its first topic's), an integer join key
  SELECT cluster_id, MIN(topic_no) AS cluster_no FROM topics GROUP BY cluster_id
),
fences AS (
  SELECT cluster_id, seq, broker, state,
         broker_change = 'REGISTERED' AND (metadata_version IS NULL OR metadata_version < 23) AS known_anomaly
  FROM brokers WHERE state IN ('fenced', 'unregistered') AND NOT bootstrap
    -- broker-log imports state brokers only from a ZooKeeper-mode controller's epochs cache
    AND coalesce(source_kind, '') NOT IN ('ZOOKEEPER', 'BROKER_LOG')
),
fence_points AS (  -- the fences' seqs through a GROUP BY on (cluster, broker): DuckDB then estimates this side
  -- as small as it is and builds the join's hash table on it, not on the 14M member states
  SELECT cluster_id, broker, {explode(seqs)} AS seq
  FROM (SELECT cluster_id, broker, {collect_sorted(seq)} AS seqs FROM fences GROUP BY cluster_id, broker) l
),
next_fences AS (  -- the seqs after a broker's previous fence (or from the cluster's first) up to its next one
  SELECT cluster_no, broker, prev_seq, seq,
         {explode_range(CAST(FLOOR(coalesce(prev_seq, first_seq) / 65536) AS BIGINT), CAST(FLOOR(seq / 65536) AS BIGINT))} AS bucket
  FROM (SELECT /*+ BROADCAST(c, b) */ c.cluster_no, f.broker, f.seq, b.first_seq,
               LAG(f.seq) OVER (PARTITION BY f.cluster_id, f.broker ORDER BY f.seq) AS prev_seq
        FROM fence_points f JOIN clusters c ON c.cluster_id = f.cluster_id
        JOIN (SELECT cluster_id, MIN(seq) AS first_seq FROM events GROUP BY cluster_id) b
          ON b.cluster_id = f.cluster_id) x
),
states AS (  -- each state with its ISR and leader (when they count) and the seq of the partition's next state
  SELECT topic_no, seq, partition, counts, a_isr, a_leader,
         -- one BIGINT partition key (the topic's number and the partition side by side): fewer sort keys
         LEAD(seq) OVER (PARTITION BY topic_no * 4294967296 + partition ORDER BY seq) AS next_seq
  FROM (SELECT /*+ BROADCAST(t) */ t.topic_no, e.seq, e.partition, e.a_isr, e.a_leader,
               e.has_after AND NOT (e.a_leader = -1 AND {size(e.a_isr)} <= 1
                                    AND (e.bootstrap OR (e.has_before AND {subset(e.a_isr, e.b_isr)}))) AS counts
        -- keyed by the topic's number (fragments/topic_numbers.sql): string keys slow the window's sort
        FROM events e JOIN topics t ON t.cluster_id = e.cluster_id AND t.topic IS NOT DISTINCT FROM e.topic
        WHERE e.kind = 'PartitionChange') l
),
topic_clusters AS (SELECT /*+ BROADCAST(c) */ t.topic_no, c.cluster_no FROM topics t JOIN clusters c ON c.cluster_id = t.cluster_id),
candidates AS (  -- member states whose broker's next fence comes before the state ends (a broker may come twice)
  SELECT /*+ BROADCAST(n) */ m.topic_no, m.seq, m.next_seq, m.partition, m.broker
  FROM (SELECT /*+ BROADCAST(c) */ s.topic_no, c.cluster_no, s.seq, s.next_seq, s.partition,
               {explode({concat(s.a_isr, {list1(s.a_leader)})})} AS broker
        FROM states s JOIN topic_clusters c ON c.topic_no = s.topic_no
        WHERE s.counts) m
  JOIN next_fences n
    ON n.cluster_no = m.cluster_no AND n.broker = m.broker AND n.bucket = CAST(FLOOR(m.seq / 65536) AS BIGINT)
       AND (n.prev_seq IS NULL OR n.prev_seq < m.seq) AND m.seq < n.seq AND (m.next_seq IS NULL OR n.seq < m.next_seq)
  WHERE m.broker >= 0
),
held AS (  -- (fence, partition state of its broker begun before it and not followed by a change before it)
  SELECT /*+ BROADCAST(t, f) */ f.cluster_id, f.seq, f.broker, f.state, f.known_anomaly, m.seq AS m_seq, t.topic, m.partition
  FROM candidates m JOIN topics t ON t.topic_no = m.topic_no
  JOIN fences f ON f.cluster_id = t.cluster_id AND f.broker = m.broker AND m.seq < f.seq AND (m.next_seq IS NULL OR f.seq < m.next_seq)
),
topic_deletes AS (
  SELECT cluster_id, seq, topic FROM events WHERE kind = 'TopicChange' AND topic_change = 'DELETED'
),
held_live AS (  -- ... and whose topic was not deleted in between
  SELECT /*+ BROADCAST(d) */ h.cluster_id, h.seq, h.broker, h.state, h.known_anomaly, h.m_seq, h.topic, h.partition
  FROM held h LEFT JOIN topic_deletes d
    ON d.cluster_id = h.cluster_id AND d.topic = h.topic AND h.m_seq < d.seq AND d.seq < h.seq
  GROUP BY h.cluster_id, h.seq, h.broker, h.state, h.known_anomaly, h.m_seq, h.topic, h.partition
  HAVING MAX(CASE WHEN d.seq IS NULL THEN 0 ELSE 1 END) = 0
),
lingering AS (
  SELECT cluster_id, seq, broker, state, known_anomaly, COUNT(*) AS n_active,
         MIN(m_seq) AS first_state_seq,
         MIN(concat(topic, '-', CAST(partition AS STRING))) AS first_partition
  FROM held_live
  GROUP BY cluster_id, seq, broker, state, known_anomaly
)
SELECT DISTINCT cluster_id, seq, state_seq AS related_seq,
       concat(eff_state, '_broker_',
              CASE WHEN broker = a_leader THEN 'became_leader' ELSE 'joined_isr' END) AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('broker ', CAST(broker AS STRING), ' neither leader nor in isr (', eff_state,
              CASE WHEN state_seq IS NULL THEN ', never registered' ELSE concat(' since seq ', CAST(state_seq AS STRING)) END,
              ')') AS expected,
       concat(topic, '-', CAST(part AS STRING), ' leader ', CAST(a_leader AS STRING), ', isr ', {show(a_isr)}) AS actual,
       CAST(1 AS BIGINT) AS magnitude
FROM joined_bad
UNION ALL
SELECT cluster_id, seq, first_state_seq, concat(state, '_while_leader_or_in_isr'),
       CASE WHEN known_anomaly THEN 'allowed' ELSE 'violated' END,
       CASE WHEN known_anomaly THEN 'known anomaly: re-registration keeps isr membership below metadata.version 23 (KAFKA-15586, KIP-966)' END,
       concat('broker ', CAST(broker AS STRING), ' removed from every leader and isr before it is ', state),
       concat('broker ', CAST(broker AS STRING), ' still leader or in isr of ', CAST(n_active AS STRING),
              ' partition(s), first ', first_partition),
       CAST(n_active AS BIGINT)
FROM lingering
