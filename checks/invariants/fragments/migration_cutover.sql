-- The cutover of a history migrated from ZooKeeper to KRaft (KIP-866), per cluster: the first KRaft
-- ControllerChange right after a ZooKeeper event (seq - 1) whose controller is the one that claimed
-- ZooKeeper (previous leader = leader); services/normalize/migration_offline.py writes it. Included
-- (checks/catalog.py) by the invariants that judge controller epochs.
  SELECT /*+ BROADCAST(c) */ c.cluster_id, MIN(c.seq) AS cut_seq
  FROM events c JOIN events p ON p.cluster_id = c.cluster_id AND p.seq = c.seq - 1
  WHERE c.kind = 'ControllerChange' AND c.source_kind IN ('KRAFT_LOG', 'KRAFT_SNAPSHOT')
    AND c.cc_leader >= 0 AND c.cc_leader = c.cc_prev_leader AND p.source_kind = 'ZOOKEEPER'
  GROUP BY c.cluster_id
