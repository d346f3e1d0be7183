-- ORDER BY (ASC/DESC, NULLS FIRST/LAST, alias, position, expression) and LIMIT / OFFSET.
-- Every ordering ends in a unique key so that the row order is fully determined.

-- name: order_asc_default_nulls
SELECT id, i FROM nulls_a ORDER BY i, id

-- name: order_desc_default_nulls
SELECT id, i FROM nulls_a ORDER BY i DESC, id

-- name: order_asc_nulls_first
SELECT id, k FROM nulls_a ORDER BY k ASC NULLS FIRST, id

-- name: order_desc_nulls_last
SELECT id, d FROM nulls_a ORDER BY d DESC NULLS LAST, id DESC

-- name: order_desc_nulls_first
SELECT id, m FROM nulls_a ORDER BY m DESC NULLS FIRST, id

-- name: order_asc_nulls_last_strings
SELECT id, s FROM nulls_a ORDER BY s ASC NULLS LAST, id

-- name: order_by_alias
SELECT id, i * -1 AS neg FROM nulls_a ORDER BY neg, id

-- name: order_by_position
SELECT s, id, k FROM nulls_a ORDER BY 3 DESC, 2

-- name: order_by_expression_not_selected
SELECT id FROM nulls_a ORDER BY COALESCE(d, 0) + COALESCE(i, 0), id

-- name: order_by_multiple_mixed
SELECT id, k, b, dt FROM nulls_a ORDER BY b DESC NULLS FIRST, dt NULLS LAST, id

-- name: order_by_boolean_and_date
SELECT id, b, dt FROM nulls_a ORDER BY dt DESC, b, id

-- name: order_by_decimal_tpch
SELECT o_orderkey, o_totalprice FROM orders ORDER BY o_totalprice DESC, o_orderkey LIMIT 10

-- name: limit_only_ordered
SELECT id FROM nulls_a ORDER BY id LIMIT 5

-- name: limit_offset
SELECT id, k FROM nulls_a ORDER BY k NULLS FIRST, id LIMIT 5 OFFSET 10

-- name: offset_beyond_end
SELECT id FROM nulls_a ORDER BY id LIMIT 5 OFFSET 100

-- name: limit_zero
SELECT id FROM nulls_a ORDER BY id LIMIT 0

-- name: limit_larger_than_input
SELECT id FROM nulls_b ORDER BY id DESC LIMIT 1000

-- name: limit_without_order_on_full_result
SELECT count(*) FROM (SELECT id FROM nulls_a LIMIT 7) t

-- name: top_n_per_aggregate
SELECT k, sum(m) AS total FROM nulls_a GROUP BY k ORDER BY total DESC NULLS LAST, k NULLS FIRST LIMIT 4

-- name: order_by_aggregate_not_selected
SELECT k FROM nulls_a GROUP BY k ORDER BY count(*) DESC, k NULLS LAST

-- name: order_limit_tpch_q3_like
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
FROM customer JOIN orders ON c_custkey = o_custkey JOIN lineitem ON l_orderkey = o_orderkey
WHERE c_mktsegment = 'BUILDING' AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate, l_orderkey
LIMIT 10

-- name: order_by_subquery_in_from
SELECT t.k, t.n FROM (SELECT k, count(*) AS n FROM nulls_a GROUP BY k) t ORDER BY t.n, t.k NULLS LAST

-- name: order_by_string_desc_tpch
SELECT n_name, n_nationkey FROM nation ORDER BY n_name DESC

-- name: order_offset_tpch
SELECT c_custkey, c_acctbal FROM customer ORDER BY c_acctbal, c_custkey LIMIT 5 OFFSET 20
