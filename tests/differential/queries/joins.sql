-- Inner, outer, cross, self and multi-way joins; NULL keys never match.

-- name: inner_join_nulls
SELECT a.id, b.id, a.k, b.v FROM nulls_a a JOIN nulls_b b ON a.k = b.k

-- name: inner_join_using_where
SELECT a.id, b.id FROM nulls_a a, nulls_b b WHERE a.k = b.k AND b.w > 0

-- name: left_join_nulls
SELECT a.id, a.k, b.id AS b_id, b.s FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k

-- name: left_join_is_null_antijoin
SELECT a.id, a.k FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k WHERE b.id IS NULL

-- name: left_join_filter_in_on
SELECT a.id, b.id FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k AND b.v > 300

-- name: left_join_left_filter_in_on
SELECT a.id, b.id FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k AND a.i > 0

-- name: right_join_nulls
SELECT a.id, b.id, b.k FROM nulls_a a RIGHT JOIN nulls_b b ON a.k = b.k

-- name: right_join_filter_in_on
SELECT a.s, b.id FROM nulls_a a RIGHT JOIN nulls_b b ON a.k = b.k AND a.d < 0

-- name: full_join_nulls
SELECT a.id, b.id, a.k, b.k FROM nulls_a a FULL OUTER JOIN nulls_b b ON a.k = b.k

-- name: full_join_coalesce_key
SELECT COALESCE(a.k, b.k) AS k, count(*) AS n, count(a.id) AS na, count(b.id) AS nb
FROM nulls_a a FULL JOIN nulls_b b ON a.k = b.k
GROUP BY COALESCE(a.k, b.k)

-- name: full_join_non_equi_extra
SELECT a.id, b.id FROM nulls_a a FULL JOIN nulls_b b ON a.k = b.k AND a.d < b.w

-- name: cross_join_small
SELECT r.r_name, n.n_name FROM region r CROSS JOIN nation n WHERE n.n_nationkey < 3

-- name: cross_join_with_empty
SELECT a.id, e.id FROM nulls_a a CROSS JOIN empty_t e

-- name: join_on_expression
SELECT a.id, b.id FROM nulls_a a JOIN nulls_b b ON a.k + 4 = b.k

-- name: join_on_string_expression
SELECT a.id, b.id FROM nulls_a a JOIN nulls_b b ON lower(a.s) = lower(b.s)

-- name: join_on_string_equality
SELECT a.id, b.id, a.s FROM nulls_a a JOIN nulls_b b ON a.s = b.s

-- name: non_equi_join_less_than
SELECT a.id, b.id FROM nulls_a a JOIN nulls_b b ON a.i < b.k - 40

-- name: non_equi_join_between
SELECT a.id, b.id FROM nulls_a a JOIN nulls_b b ON a.d BETWEEN b.w - 1 AND b.w + 1

-- name: equi_and_non_equi_join
SELECT a.id, b.id, a.m, b.v FROM nulls_a a JOIN nulls_b b ON a.k = b.k AND a.m < b.v

-- name: left_join_non_equi_only
SELECT a.id, b.id FROM nulls_a a LEFT JOIN nulls_b b ON a.dt > b.dt AND b.w > 10

-- name: multi_key_join
SELECT a.id, b.id FROM nulls_a a JOIN nulls_b b ON a.k = b.k AND a.b = (b.w > 5)

-- name: multi_key_self_join_strings
SELECT x.id, y.id FROM nulls_a x JOIN nulls_a y ON x.k = y.k AND x.s = y.s AND x.id <> y.id

-- name: multi_key_left_join
SELECT a.id, b.id, a.k, a.s FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k AND a.s = b.s

-- name: multi_key_join_tpch
SELECT ps.ps_partkey, ps.ps_suppkey, l.l_orderkey, l.l_linenumber
FROM partsupp ps JOIN lineitem l ON ps.ps_partkey = l.l_partkey AND ps.ps_suppkey = l.l_suppkey
WHERE l.l_orderkey < 200

-- name: self_join
SELECT x.id, y.id FROM nulls_a x JOIN nulls_a y ON x.k = y.k AND x.id < y.id

-- name: self_left_join_nation
SELECT n1.n_name, n2.n_name FROM nation n1 LEFT JOIN nation n2
  ON n1.n_regionkey = n2.n_regionkey AND n2.n_nationkey = n1.n_nationkey + 1

-- name: three_way_join
SELECT n.n_name, r.r_name, count(*) AS suppliers
FROM supplier s JOIN nation n ON s.s_nationkey = n.n_nationkey
JOIN region r ON n.n_regionkey = r.r_regionkey
GROUP BY n.n_name, r.r_name

-- name: four_way_join
SELECT c.c_mktsegment, r.r_name, sum(o.o_totalprice) AS total, count(*) AS n
FROM customer c JOIN orders o ON c.c_custkey = o.o_custkey
JOIN nation n ON c.c_nationkey = n.n_nationkey
JOIN region r ON n.n_regionkey = r.r_regionkey
WHERE o.o_orderdate < DATE '1993-01-01'
GROUP BY c.c_mktsegment, r.r_name

-- name: three_way_mixed_outer
SELECT a.id, b.id, c.id
FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k
LEFT JOIN nulls_a c ON b.id = c.id

-- name: join_chain_outer_then_inner
SELECT a.id, b.id, n.n_name
FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k
JOIN nation n ON n.n_nationkey = a.k

-- name: join_tpch_customers_without_orders
SELECT c.c_custkey FROM customer c LEFT JOIN orders o ON c.c_custkey = o.o_custkey
WHERE o.o_orderkey IS NULL

-- name: join_with_derived_table
SELECT a.id, t.total FROM nulls_a a
JOIN (SELECT k, sum(v) AS total FROM nulls_b GROUP BY k) t ON a.k = t.k

-- name: join_with_empty_left
SELECT a.id, e.id FROM nulls_a a LEFT JOIN empty_t e ON a.k = e.k

-- name: join_with_empty_inner
SELECT a.id FROM nulls_a a JOIN empty_t e ON a.k = e.k
