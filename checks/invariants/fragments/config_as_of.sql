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
config_resolved AS (  -- per probed seq, the most specific level with a value (a deleted key, value NULL, falls
  -- through), its value and the config's seq: one aggregate (a probe has one row per level), not the levels
  -- grouped and then joined back to their rows (a shuffle of every probe on Spark)
  SELECT cluster_id, seq, MIN(level) AS level, min_by(value_asof, level) AS value_asof,
         min_by(config_seq, level) AS config_seq
  FROM config_as_of WHERE value_asof IS NOT NULL
  GROUP BY cluster_id, seq
)
