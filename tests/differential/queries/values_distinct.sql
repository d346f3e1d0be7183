-- VALUES as a table with column aliases, and SELECT DISTINCT.

-- name: values_table
SELECT x, y FROM (VALUES (1, 'one'), (2, 'two'), (3, 'three')) AS v(x, y)

-- name: values_with_nulls
SELECT x, y FROM (VALUES (1, 'a'), (NULL, 'b'), (3, NULL)) AS v(x, y) WHERE x IS NOT NULL OR y = 'b'

-- name: values_joined_to_table
SELECT a.id, v.label FROM nulls_a a JOIN (VALUES (1, 'low'), (8, 'high')) AS v(key, label) ON a.k = v.key

-- name: values_aggregated
SELECT sum(x), avg(x), count(y) FROM (VALUES (1, 'a'), (2, NULL), (4, 'c')) AS v(x, y)

-- name: values_decimal_and_date
SELECT p * 2 AS doubled, CAST(dd + INTERVAL '1' DAY AS DATE) AS next_day
FROM (VALUES (CAST(1.25 AS DECIMAL(10, 2)), DATE '2020-02-28'),
             (CAST(-3.50 AS DECIMAL(10, 2)), DATE '2020-12-31')) AS v(p, dd)

-- name: values_in_cte
WITH v(code, name) AS (VALUES ('AIR', 'air'), ('MAIL', 'mail'))
SELECT v.name, count(*) AS n FROM lineitem JOIN v ON l_shipmode = v.code GROUP BY v.name

-- name: values_ordered
SELECT x FROM (VALUES (3), (1), (2)) AS v(x) ORDER BY x DESC

-- name: distinct_single_with_nulls
SELECT DISTINCT k FROM nulls_a

-- name: distinct_multi
SELECT DISTINCT k, b FROM nulls_a

-- name: distinct_strings
SELECT DISTINCT s FROM nulls_a

-- name: distinct_expression
SELECT DISTINCT i % 5 AS r FROM nulls_a

-- name: distinct_with_order
SELECT DISTINCT k FROM nulls_b ORDER BY k NULLS FIRST

-- name: distinct_tpch
SELECT DISTINCT l_shipmode, l_returnflag FROM lineitem

-- name: distinct_on_empty
SELECT DISTINCT k, s FROM empty_t

-- name: distinct_after_join
SELECT DISTINCT a.k, b.s FROM nulls_a a JOIN nulls_b b ON a.k = b.k
