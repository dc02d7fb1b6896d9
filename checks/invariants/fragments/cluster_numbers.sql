-- Each cluster id with a small integer (1, 2, ... in id order), for the PARTITION BY of windows over
-- many rows: DuckDB sorts and partitions by an integer much faster than by a string id (a 10M-event
-- window partitioned by cluster id, topic and partition took twice as long as by this number, topic and
-- partition). Included (checks/catalog.py) by the invariants whose windows run over every partition's
-- events.
  SELECT cluster_id, row_number() OVER (ORDER BY cluster_id) AS cluster_no
  FROM (SELECT DISTINCT cluster_id FROM events) c
