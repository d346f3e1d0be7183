-- UNION / INTERSECT / EXCEPT with and without ALL; set operations treat NULLs as equal.

-- name: union_distinct_nulls
SELECT k FROM nulls_a UNION SELECT k FROM nulls_b

-- name: union_all_nulls
SELECT k, s FROM nulls_a UNION ALL SELECT k, s FROM nulls_b

-- name: union_all_three_inputs
SELECT id, 'a' AS src FROM nulls_a WHERE id < 4
UNION ALL SELECT id, 'b' FROM nulls_b WHERE id < 4
UNION ALL SELECT id, 'e' FROM empty_t

-- name: union_distinct_multi_column
SELECT k, b FROM nulls_a UNION SELECT k, NULL FROM nulls_b

-- name: union_type_widening
SELECT i AS x FROM nulls_a WHERE id < 6 UNION ALL SELECT bi FROM nulls_a WHERE id > 35

-- name: union_with_order_limit
SELECT id, k FROM nulls_a UNION ALL SELECT id + 100, k FROM nulls_b ORDER BY 1 LIMIT 10

-- name: intersect_distinct
SELECT k FROM nulls_a INTERSECT SELECT k FROM nulls_b

-- name: intersect_all
SELECT k FROM nulls_a INTERSECT ALL SELECT k FROM nulls_b

-- name: intersect_strings
SELECT s FROM nulls_a INTERSECT SELECT s FROM nulls_b

-- name: except_distinct
SELECT k FROM nulls_a EXCEPT SELECT k FROM nulls_b

-- name: except_all
SELECT k FROM nulls_a EXCEPT ALL SELECT k FROM nulls_b

-- name: except_all_strings
SELECT s FROM nulls_a EXCEPT ALL SELECT s FROM nulls_b

-- name: except_empty
SELECT k, s FROM nulls_a EXCEPT SELECT k, s FROM empty_t

-- name: intersect_empty
SELECT k FROM nulls_a INTERSECT SELECT k FROM empty_t

-- name: union_tpch_nations_suppliers
SELECT n_nationkey AS key FROM nation WHERE n_regionkey = 1
UNION SELECT s_nationkey FROM supplier WHERE s_acctbal < 0

-- name: set_ops_chained
(SELECT k FROM nulls_a UNION SELECT k FROM nulls_b) EXCEPT SELECT k FROM nulls_a WHERE i > 0

-- name: union_in_subquery_aggregate
SELECT count(*), count(k), count(DISTINCT k) FROM (
  SELECT k FROM nulls_a UNION ALL SELECT k FROM nulls_b) t
