-- why: window functions run after grouping; DISTINCT is an aggregate without aggregates.
SELECT DISTINCT n_regionkey, count(*) OVER (PARTITION BY n_regionkey) AS c FROM nation
