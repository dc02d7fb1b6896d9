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
-- As-of lookups use one ordered stream per (cluster, broker) and a running count that numbers the
-- broker's state versions, so they scale without range joins.
WITH brokers AS (
  SELECT cluster_id, seq, broker_id AS broker, bootstrap, broker_change, metadata_version, source_kind,
         CASE WHEN broker_change = 'UNREGISTERED' OR broker_fenced IS NULL THEN 'unregistered'
              WHEN broker_fenced THEN 'fenced' WHEN broker_shutdown THEN 'shutting_down' ELSE 'active' END AS state
  FROM events WHERE kind = 'BrokerChange'
),
pc AS (
  SELECT cluster_id, seq, topic, partition, bootstrap, has_before, has_after,
         b_isr, b_leader, a_isr, a_leader
  FROM events WHERE kind = 'PartitionChange'
),
joiners AS (
  SELECT cluster_id, seq, topic, partition, a_leader, a_isr,
         {explode(CASE WHEN bootstrap OR NOT has_before THEN {union(a_isr, {list1(a_leader)})}
                  ELSE {union({except(a_isr, b_isr)}, {except({list1(a_leader)}, {list1(b_leader)})})} END)} AS broker
  FROM pc WHERE has_after AND NOT (a_leader = -1 AND {size(a_isr)} <= 1
                                    AND (bootstrap OR (has_before AND {subset(a_isr, b_isr)})))
),
stream AS (
  SELECT cluster_id, seq, broker, state, 1 AS is_broker,
         CAST(NULL AS STRING) AS topic, CAST(NULL AS INT) AS part, CAST(NULL AS INT) AS a_leader,
         CAST(NULL AS STRING) AS isr_text
  FROM brokers
  UNION ALL
  SELECT cluster_id, seq, broker, CAST(NULL AS STRING), 0, topic, partition, a_leader, {show(a_isr)}
  FROM joiners WHERE broker >= 0
),
versioned AS (
  SELECT *, SUM(is_broker) OVER (PARTITION BY cluster_id, broker ORDER BY seq
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS version
  FROM stream
),
as_of AS (
  SELECT *,
         FIRST_VALUE(state) OVER (PARTITION BY cluster_id, broker, version ORDER BY seq
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS broker_state,
         FIRST_VALUE(seq) OVER (PARTITION BY cluster_id, broker, version ORDER BY seq
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS state_seq
  FROM versioned
),
registry AS (
  SELECT cluster_id, MIN(seq) AS first_broker_seq FROM brokers GROUP BY cluster_id
),
joined_bad AS (
  SELECT a.cluster_id, a.seq, a.broker, a.topic, a.part, a.a_leader, a.isr_text,
         CASE WHEN a.version = 0 THEN 'unregistered' ELSE a.broker_state END AS eff_state,
         CASE WHEN a.version = 0 THEN CAST(NULL AS BIGINT) ELSE a.state_seq END AS state_seq
  FROM as_of a JOIN registry r ON a.cluster_id = r.cluster_id
  WHERE a.is_broker = 0
    AND ((a.version = 0 AND r.first_broker_seq < a.seq) OR a.broker_state IN ('fenced', 'unregistered', 'shutting_down'))
),
-- (b) membership intervals: a partition state [seq, end) lists its leader and ISR members.
topic_deletes AS (
  SELECT cluster_id, seq, topic, 0 AS is_pc, 1 AS is_del, CAST(NULL AS INT) AS partition
  FROM events WHERE kind = 'TopicChange' AND topic_change = 'DELETED'
),
pc_next AS (
  SELECT cluster_id, seq, topic, partition, has_after, a_isr, a_leader, b_isr, has_before, bootstrap,
         LEAD(seq) OVER (PARTITION BY cluster_id, topic, partition ORDER BY seq) AS next_seq
  FROM pc
),
pc_del AS (
  SELECT cluster_id, seq, topic, partition, is_pc,
         MIN(CASE WHEN is_del = 1 THEN seq END) OVER (PARTITION BY cluster_id, topic ORDER BY seq
             ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS del_seq
  FROM (SELECT cluster_id, seq, topic, 1 AS is_pc, 0 AS is_del, partition FROM pc
        UNION ALL SELECT cluster_id, seq, topic, is_pc, is_del, partition FROM topic_deletes) u
),
intervals AS (
  SELECT n.cluster_id, n.seq, n.topic, n.partition, n.a_isr, n.a_leader,
         CASE WHEN n.next_seq IS NULL AND d.del_seq IS NULL THEN CAST(9223372036854775807 AS BIGINT)
              WHEN n.next_seq IS NULL THEN d.del_seq
              WHEN d.del_seq IS NULL THEN n.next_seq
              WHEN d.del_seq < n.next_seq THEN d.del_seq ELSE n.next_seq END AS end_seq
  FROM pc_next n JOIN pc_del d ON n.cluster_id = d.cluster_id AND n.seq = d.seq AND d.is_pc = 1
  WHERE n.has_after AND NOT (n.a_leader = -1 AND {size(n.a_isr)} <= 1
                             AND (n.bootstrap OR (n.has_before AND {subset(n.a_isr, n.b_isr)})))
),
members AS (
  SELECT cluster_id, seq, end_seq, topic, partition,
         {explode({union(a_isr, {list1(a_leader)})})} AS broker
  FROM intervals
),
fences AS (
  SELECT cluster_id, seq, broker, state,
         broker_change = 'REGISTERED' AND (metadata_version IS NULL OR metadata_version < 23) AS known_anomaly
  FROM brokers WHERE state IN ('fenced', 'unregistered') AND NOT bootstrap
    -- broker-log imports state brokers only from a ZooKeeper-mode controller's epochs cache
    AND coalesce(source_kind, '') NOT IN ('ZOOKEEPER', 'BROKER_LOG')
),
deltas AS (
  SELECT cluster_id, seq, broker, 1 AS delta, 0 AS is_fence FROM members WHERE broker >= 0
  UNION ALL
  SELECT cluster_id, end_seq, broker, -1, 0 FROM members WHERE broker >= 0
  UNION ALL
  SELECT cluster_id, seq, broker, 0, 1 FROM fences
),
active AS (
  SELECT cluster_id, seq, broker, is_fence,
         SUM(delta) OVER (PARTITION BY cluster_id, broker ORDER BY seq, delta
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n_active
  FROM deltas
),
bad_fences AS (
  SELECT a.cluster_id, a.seq, a.broker, f.state, f.known_anomaly, a.n_active
  FROM active a JOIN fences f ON a.cluster_id = f.cluster_id AND a.seq = f.seq AND a.broker = f.broker
  WHERE a.is_fence = 1 AND a.n_active > 0
),
lingering AS (
  SELECT b.cluster_id, b.seq, b.broker, b.state, b.known_anomaly, b.n_active,
         MIN(m.seq) AS first_state_seq,
         MIN(concat(m.topic, '-', CAST(m.partition AS STRING))) AS first_partition
  FROM bad_fences b JOIN members m
    ON m.cluster_id = b.cluster_id AND m.broker = b.broker AND m.seq < b.seq AND b.seq < m.end_seq
  GROUP BY b.cluster_id, b.seq, b.broker, b.state, b.known_anomaly, b.n_active
)
SELECT cluster_id, seq, state_seq AS related_seq,
       concat(eff_state, '_broker_',
              CASE WHEN broker = a_leader THEN 'became_leader' ELSE 'joined_isr' END) AS rule,
       'violated' AS status, CAST(NULL AS STRING) AS allowance,
       concat('broker ', CAST(broker AS STRING), ' neither leader nor in isr (', eff_state,
              CASE WHEN state_seq IS NULL THEN ', never registered' ELSE concat(' since seq ', CAST(state_seq AS STRING)) END,
              ')') AS expected,
       concat(topic, '-', CAST(part AS STRING), ' leader ', CAST(a_leader AS STRING), ', isr ', isr_text) AS actual,
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
