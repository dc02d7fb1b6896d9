-- A config value as of a seq, resolved over scopes: the CTEs `config_changes` (cluster_id, seq, scope,
-- value; value NULL for a deleted key or one that does not parse) and `config_probes` (cluster_id, seq,
-- scope, level) come first; `config_resolved` gives each probed (cluster_id, seq) the value of its most
-- specific scope (lowest level) that has one as of that seq, with that level and the config's seq
-- (no row when no scope has one). Included (checks/catalog.py) as CTEs by isr_elr_sanity and
-- unclean_election_allowed.
config_versions AS (  -- each value with the seq of the scope's next one (config changes are few)
  SELECT cluster_id, seq, scope, value,
         LEAD(seq) OVER (PARTITION BY cluster_id, scope ORDER BY seq) AS next_seq
  FROM config_changes
),
config_as_of AS (  -- each probe with its scope's value as of its seq, where the scope has one
  SELECT /*+ BROADCAST(v) */ p.cluster_id, p.seq, p.level, v.value AS value_asof, v.seq AS config_seq
  FROM config_probes p JOIN config_versions v
    ON v.cluster_id = p.cluster_id AND v.scope = p.scope AND v.seq < p.seq
       AND (v.next_seq IS NULL OR p.seq < v.next_seq)
),
config_levels AS (  -- the most specific level with a value (a deleted key, value NULL, falls through)
  SELECT cluster_id, seq, MIN(level) AS level
  FROM config_as_of WHERE value_asof IS NOT NULL
  GROUP BY cluster_id, seq
),
config_resolved AS (
  SELECT a.cluster_id, a.seq, a.level, a.value_asof, a.config_seq
  FROM config_levels r
  JOIN config_as_of a ON a.cluster_id = r.cluster_id AND a.seq = r.seq AND a.level = r.level
)
