-- I12. An election whose new leader was in neither the previous ISR nor the previous ELR is unclean;
-- so is one the source labels UNCLEAN or that enters RECOVERING (Kafka's TopicDelta counts those).
-- Not unclean: a reassignment completing in the same record that adds its target replica to the ISR
-- (the sitting leader's AlterPartition) and moves leadership there, because the old leader is being
-- removed — the new leader was an adding replica, is no longer adding, and is in the new ISR
-- (seen on real KRaft 3.9 and 4.x clusters: ISR [1,3] -> [2,3], leader 1 -> 2, REASSIGNMENT_COMPLETE).
-- It is allowed only where unclean.leader.election.enable is true as of that event: the topic's
-- config, else the controller node's broker config, else the cluster-wide broker default, else
-- Kafka's default (false). An unclean election must set leader recovery state RECOVERING (KIP-704);
-- ZooKeeper-mode sources are not held to that. Allowed elections are reported as 'allowed'.
-- KIP-966 (Kafka 4.x, eligible leader replicas on): when the ISR and the ELR are both empty and the
-- last known ELR names one replica, the last leader, Kafka elects it when it comes back, in RECOVERING,
-- whatever unclean.leader.election.enable says (PartitionChangeBuilder.canElectLastKnownLeader, the
-- "balanced" recovery). It held every committed record when it led, unless its own shutdown was unclean,
-- so it is reported as allowed, rule last_known_leader_election, with that allowance named.
-- ELR laundering: a leader from the previous ELR (not the ISR) where no ELR can exist (a ZooKeeper source's
-- state, metadata.version below 22: isr_elr_sanity's elr_before_metadata_version_22 at the change that made
-- that ELR) was in no legal ISR or ELR, so the election is unclean, though the ELR makes it look clean. It is
-- judged like any unclean election, under its own rule unclean_election_via_elr_that_could_not_exist, whose
-- related_seq is the change that put the new leader into that ELR (the last one before the election).
WITH candidates AS (
  SELECT cluster_id, seq, topic, partition, controller_id, source_kind, b_leader, a_leader, b_isr, b_elr,
         a_recovery,
         CASE WHEN {size(b_isr)} = 0 AND {size(b_elr)} = 0 AND {size(b_last_known_elr)} = 1
                   AND {contains(b_last_known_elr, a_leader)} AND a_recovery = 'RECOVERING'
              THEN 1 ELSE 0 END AS last_known,
         CASE WHEN {contains(b_elr, a_leader)} AND NOT {contains(b_isr, a_leader)}
                   AND (source_kind = 'ZOOKEEPER' OR metadata_version < 22)
              THEN 1 ELSE 0 END AS laundered
  FROM events
  WHERE kind = 'PartitionChange' AND NOT bootstrap AND has_before AND has_after
    AND a_leader <> -1 AND a_leader <> b_leader
    AND ((NOT {contains(b_isr, a_leader)} AND NOT {contains(b_elr, a_leader)}
          AND NOT ({contains(b_adding, a_leader)} AND NOT {contains(a_adding, a_leader)}
                   AND {contains(a_isr, a_leader)}))
         OR election = 'UNCLEAN' OR (a_recovery = 'RECOVERING' AND b_recovery <> 'RECOVERING')
         OR ({contains(b_elr, a_leader)} AND NOT {contains(b_isr, a_leader)}
             AND (source_kind = 'ZOOKEEPER' OR metadata_version < 22)))
),
laundered_entries AS (  -- the change that put each laundered election's new leader into the ELR
  SELECT l.cluster_id, l.seq, MAX(e.seq) AS entry_seq
  FROM candidates l
  JOIN events e ON e.cluster_id = l.cluster_id AND e.topic = l.topic AND e.partition = l.partition
  WHERE l.laundered = 1 AND e.kind = 'PartitionChange' AND e.seq < l.seq AND e.has_after AND {size(e.a_elr)} > 0
    AND {contains(e.a_elr, l.a_leader)} AND NOT (e.has_before AND NOT e.bootstrap AND {contains(e.b_elr, l.a_leader)})
  GROUP BY l.cluster_id, l.seq
),
config_changes AS (
  SELECT cluster_id, seq, config_value AS value,
         CASE WHEN config_type = 'TOPIC' THEN concat('topic:', config_resource)
              WHEN config_resource = '' THEN 'cluster:'
              ELSE concat('broker:', config_resource) END AS scope
  FROM events
  WHERE kind = 'ConfigChange' AND config_name = 'unclean.leader.election.enable'
    AND config_type IN ('TOPIC', 'BROKER')
),
config_probes AS (
  SELECT cluster_id, seq, concat('topic:', topic) AS scope, 1 AS level FROM candidates
  UNION ALL
  SELECT cluster_id, seq, concat('broker:', CAST(controller_id AS STRING)), 2 FROM candidates
  UNION ALL
  SELECT cluster_id, seq, 'cluster:', 3 FROM candidates
),
{include(config_as_of)},
effective AS (
  SELECT c.*, r.level, r.value_asof, r.config_seq,
         CASE WHEN r.level IS NOT NULL AND lower(trim(r.value_asof)) = 'true' THEN 1 ELSE 0 END AS allowed
  FROM candidates c
  LEFT JOIN config_resolved r ON c.cluster_id = r.cluster_id AND c.seq = r.seq
),
-- ZooKeeper-mode broker logs (the cluster's import holds a BrokerChange read from them: only a ZooKeeper
-- controller's registered-brokers cache and a ZooKeeper broker's registration state one), from that event on:
-- a ZooKeeper-mode source, not held to KIP-704 (before 3.2 its lines state no recovery state at all)
zk_broker_logs AS (
  SELECT cluster_id, min(seq) AS since FROM events
  WHERE kind = 'BrokerChange' AND source_kind = 'BROKER_LOG' GROUP BY cluster_id
),
described AS (
  SELECT *,
         CASE WHEN level IS NULL THEN 'unclean.leader.election.enable=false (Kafka default)'
              ELSE concat('unclean.leader.election.enable=', value_asof, ' (',
                          CASE level WHEN 1 THEN 'topic' WHEN 2 THEN 'controller node' ELSE 'cluster default' END,
                          ' config, seq ', CAST(config_seq AS STRING), ')') END AS config_text,
         CASE WHEN level IS NOT NULL THEN
           concat('unclean.leader.election.enable=', value_asof, ' (',
                  CASE level WHEN 1 THEN 'topic' WHEN 2 THEN 'controller node' ELSE 'cluster default' END,
                  ' config)') END AS allowance_text,
         concat(topic, '-', CAST(partition AS STRING), ' leader ', CAST(b_leader AS STRING), ' -> ',
                CAST(a_leader AS STRING), ', previous isr ', {show(b_isr)}, ', elr ', {show(b_elr)},
                ', recovery ', a_recovery) AS what
  FROM effective
)
SELECT cluster_id, seq, config_seq AS related_seq,
       CASE WHEN allowed = 1 THEN 'unclean_election' WHEN last_known = 1 THEN 'last_known_leader_election'
            ELSE 'unclean_election_not_allowed' END AS rule,
       CASE WHEN allowed = 1 OR last_known = 1 THEN 'allowed' ELSE 'violated' END AS status,
       CASE WHEN allowed = 1 THEN allowance_text
            WHEN last_known = 1 THEN 'KIP-966 last known leader: ISR and ELR empty, LastKnownElr = [new leader]' END
         AS allowance,
       concat('new leader in previous isr or elr; ', config_text) AS expected,
       what AS actual,
       CAST(1 AS BIGINT) AS magnitude
FROM described WHERE laundered = 0
UNION ALL
SELECT d.cluster_id, d.seq, x.entry_seq, 'unclean_election_via_elr_that_could_not_exist',
       CASE WHEN d.allowed = 1 THEN 'allowed' ELSE 'violated' END,
       CASE WHEN d.allowed = 1 THEN d.allowance_text END,
       concat('new leader in previous isr, or in an elr that can exist; ', d.config_text),
       concat(d.what, '; its elr membership from seq ', coalesce(CAST(x.entry_seq AS STRING), '?'),
              CASE WHEN d.source_kind = 'ZOOKEEPER' THEN ' (ZooKeeper mode)' ELSE ' (metadata.version below 22)' END),
       CAST(1 AS BIGINT)
FROM described d LEFT JOIN laundered_entries x ON x.cluster_id = d.cluster_id AND x.seq = d.seq
WHERE d.laundered = 1
UNION ALL
SELECT d.cluster_id, d.seq, CAST(NULL AS BIGINT), 'unclean_election_without_recovering', 'violated',
       CAST(NULL AS STRING), 'leader recovery state RECOVERING after an unclean election', d.what, CAST(1 AS BIGINT)
FROM described d
LEFT JOIN zk_broker_logs z ON d.cluster_id = z.cluster_id
WHERE d.a_recovery = 'RECOVERED' AND d.source_kind <> 'ZOOKEEPER'
  AND NOT (d.source_kind = 'BROKER_LOG' AND z.since IS NOT NULL AND z.since < d.seq)
