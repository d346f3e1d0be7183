-- GROUP BY expressions and positions; HAVING, including aggregates not in the select list.

-- name: group_by_expression
SELECT i % 3 AS r, count(*) AS n FROM nulls_a GROUP BY i % 3

-- name: group_by_position
SELECT k, b, count(*) FROM nulls_a GROUP BY 1, 2

-- name: group_by_position_expression
SELECT EXTRACT(YEAR FROM dt) AS y, count(*) FROM nulls_a GROUP BY 1

-- name: group_by_alias_free_expression_not_selected
SELECT count(*) AS n, sum(m) AS total FROM nulls_a GROUP BY k

-- name: group_by_case_expression
SELECT CASE WHEN i > 0 THEN 'p' ELSE 'np' END AS sign, sum(d) AS sd FROM nulls_a
GROUP BY CASE WHEN i > 0 THEN 'p' ELSE 'np' END

-- name: group_by_expression_with_selected_derivation
SELECT k + 1 AS k1, (k + 1) * 2 AS k2, count(*) AS n FROM nulls_a GROUP BY k + 1

-- name: having_count
SELECT k, count(*) AS n FROM nulls_a GROUP BY k HAVING count(*) >= 5

-- name: having_aggregate_not_selected
SELECT k FROM nulls_a GROUP BY k HAVING sum(d) > 0

-- name: having_on_group_key
SELECT k, max(m) AS mm FROM nulls_a GROUP BY k HAVING k IS NULL OR k > 6

-- name: having_with_and_or
SELECT b, count(*) AS n FROM nulls_a GROUP BY b HAVING count(*) > 5 AND (min(i) < 0 OR max(i) > 40)

-- name: having_without_group_by
SELECT count(*) FROM nulls_a HAVING count(*) > 100

-- name: having_without_group_by_true
SELECT sum(m) FROM nulls_a HAVING count(*) > 1

-- name: having_tpch_q11_like
SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value
FROM partsupp JOIN supplier ON ps_suppkey = s_suppkey JOIN nation ON s_nationkey = n_nationkey
WHERE n_name = 'GERMANY'
GROUP BY ps_partkey
HAVING sum(ps_supplycost * ps_availqty) > 500000

-- name: having_tpch_q18_like
SELECT l_orderkey, sum(l_quantity) AS qty FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 250

-- name: having_count_distinct
SELECT s, count(DISTINCT k) AS dk FROM nulls_a GROUP BY s HAVING count(DISTINCT k) > 1

-- name: group_by_all_columns_is_distinct
SELECT k, s FROM nulls_a GROUP BY k, s
