-- Each (cluster id, topic name) of the partition states and samples with a small integer, carried through
-- the windows over every partition's rows instead of the two strings: string partition keys make DuckDB's
-- window sort slow (the partition timeline's window over 10M rows: 6.4 s keyed by cluster number and topic
-- name, 4.8 s by this number). Join it with `n.cluster_id = e.cluster_id AND n.topic IS NOT DISTINCT FROM
-- e.topic` (a state without a topic name keeps one timeline, as with the name as key). Included
-- (checks/catalog.py) by the partition timeline and fenced_broker_not_in_isr.
  SELECT cluster_id, topic, row_number() OVER (ORDER BY cluster_id, topic) AS topic_no
  FROM (SELECT DISTINCT cluster_id, topic FROM events WHERE kind IN ('PartitionChange', 'OffsetSample')) t
