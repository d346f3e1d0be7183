-- Scalar, IN / NOT IN, EXISTS / NOT EXISTS subqueries, correlated and not, with NULLs.

-- name: scalar_uncorrelated_where
SELECT id, d FROM nulls_a WHERE d > (SELECT avg(d) FROM nulls_a)

-- name: scalar_uncorrelated_select
SELECT id, (SELECT max(v) FROM nulls_b) AS top FROM nulls_a WHERE id <= 5

-- name: scalar_uncorrelated_empty_is_null
SELECT id, (SELECT max(m) FROM empty_t) AS missing FROM nulls_a WHERE id <= 3

-- name: scalar_correlated_where
SELECT a.id, a.m FROM nulls_a a
WHERE a.m > (SELECT avg(b.v) FROM nulls_b b WHERE b.k = a.k) - 500

-- name: scalar_correlated_select
SELECT a.id, (SELECT count(*) FROM nulls_b b WHERE b.k = a.k) AS matches FROM nulls_a a

-- name: scalar_correlated_select_sum_null
SELECT a.id, (SELECT sum(b.v) FROM nulls_b b WHERE b.k = a.k) AS total FROM nulls_a a

-- name: scalar_correlated_non_equality
SELECT a.id, (SELECT count(*) FROM nulls_b b WHERE b.w < a.d) AS smaller FROM nulls_a a

-- name: scalar_correlated_tpch
SELECT o.o_orderkey, o.o_totalprice FROM orders o
WHERE o.o_totalprice > (SELECT 2 * avg(o2.o_totalprice) FROM orders o2 WHERE o2.o_custkey = o.o_custkey)

-- name: scalar_in_having
SELECT k, sum(m) AS total FROM nulls_a GROUP BY k
HAVING sum(m) > (SELECT min(v) FROM nulls_b)

-- name: scalar_correlated_in_having
SELECT a.k, count(*) AS n FROM nulls_a a GROUP BY a.k
HAVING count(*) > (SELECT count(*) FROM nulls_b b WHERE b.k = a.k)

-- name: in_subquery
SELECT id FROM nulls_a WHERE k IN (SELECT k FROM nulls_b)

-- name: in_subquery_tpch
SELECT c_custkey, c_name FROM customer
WHERE c_custkey IN (SELECT o_custkey FROM orders WHERE o_totalprice > 400000)

-- name: not_in_subquery_with_null_inner
SELECT id FROM nulls_a WHERE k NOT IN (SELECT k FROM nulls_b)

-- name: not_in_subquery_without_null_inner
SELECT id, k FROM nulls_a WHERE k NOT IN (SELECT k FROM nulls_b WHERE k IS NOT NULL)

-- name: not_in_subquery_empty_inner
SELECT id FROM nulls_a WHERE k NOT IN (SELECT k FROM empty_t)

-- name: in_subquery_selected_as_value
SELECT id, k IN (SELECT k FROM nulls_b) AS hit, k NOT IN (SELECT k FROM nulls_b WHERE k IS NOT NULL) AS miss
FROM nulls_a

-- name: in_correlated
SELECT a.id FROM nulls_a a WHERE a.s IN (SELECT b.s FROM nulls_b b WHERE b.id > a.k)

-- name: in_correlated_non_equality
SELECT a.id FROM nulls_a a WHERE a.k IN (SELECT b.k FROM nulls_b b WHERE b.w > a.d)

-- name: not_in_correlated
SELECT a.id FROM nulls_a a WHERE a.i NOT IN (SELECT b.k FROM nulls_b b WHERE b.w > a.d)

-- name: not_in_correlated_tpch
SELECT s.s_suppkey FROM supplier s
WHERE s.s_suppkey NOT IN (SELECT ps.ps_suppkey FROM partsupp ps
                          WHERE ps.ps_availqty > 9000 AND ps.ps_supplycost < s.s_acctbal / 10)

-- name: exists_uncorrelated
SELECT id FROM nulls_a WHERE EXISTS (SELECT 1 FROM nulls_b WHERE w > 19)

-- name: exists_uncorrelated_empty
SELECT id FROM nulls_a WHERE EXISTS (SELECT 1 FROM empty_t)

-- name: not_exists_uncorrelated_empty
SELECT id FROM nulls_a WHERE NOT EXISTS (SELECT 1 FROM empty_t)

-- name: exists_correlated
SELECT a.id FROM nulls_a a WHERE EXISTS (SELECT 1 FROM nulls_b b WHERE b.k = a.k)

-- name: not_exists_correlated
SELECT a.id, a.k FROM nulls_a a WHERE NOT EXISTS (SELECT 1 FROM nulls_b b WHERE b.k = a.k)

-- name: exists_correlated_non_equality
SELECT a.id FROM nulls_a a WHERE EXISTS (SELECT 1 FROM nulls_b b WHERE b.k = a.k AND b.v > a.m)

-- name: not_exists_correlated_non_equality_only
SELECT a.id FROM nulls_a a WHERE NOT EXISTS (SELECT 1 FROM nulls_b b WHERE b.w > a.d)

-- name: exists_tpch_q4_like
SELECT o_orderpriority, count(*) AS order_count FROM orders o
WHERE o_orderdate >= DATE '1995-01-01' AND o_orderdate < DATE '1995-04-01'
  AND EXISTS (SELECT * FROM lineitem l WHERE l.l_orderkey = o.o_orderkey
              AND l.l_commitdate < l.l_receiptdate)
GROUP BY o_orderpriority

-- name: not_exists_tpch_q21_like
SELECT l1.l_orderkey, l1.l_linenumber FROM lineitem l1
WHERE l1.l_orderkey < 300
  AND NOT EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey
                  AND l2.l_suppkey <> l1.l_suppkey AND l2.l_receiptdate > l1.l_receiptdate)

-- name: exists_under_or
SELECT a.id FROM nulls_a a
WHERE a.i > 40 OR EXISTS (SELECT 1 FROM nulls_b b WHERE b.k = a.k AND b.w < 0)

-- name: in_under_or
SELECT a.id FROM nulls_a a WHERE a.d < -50 OR a.k IN (SELECT k FROM nulls_b WHERE v > 400)

-- name: not_in_under_or
SELECT a.id FROM nulls_a a WHERE a.b OR a.k NOT IN (SELECT k FROM nulls_b WHERE k IS NOT NULL)

-- name: scalar_under_or
SELECT a.id FROM nulls_a a
WHERE a.i IS NULL OR a.i > (SELECT count(*) FROM nulls_b b WHERE b.k = a.k) * 10

-- name: exists_in_case
SELECT a.id,
       CASE WHEN EXISTS (SELECT 1 FROM nulls_b b WHERE b.k = a.k) THEN 'matched' ELSE 'alone' END AS tag
FROM nulls_a a

-- name: in_subquery_in_case
SELECT a.id, CASE WHEN a.s IN (SELECT s FROM nulls_b) THEN 1 WHEN a.s IS NULL THEN 2 ELSE 3 END AS c
FROM nulls_a a

-- name: scalar_in_case
SELECT a.id,
       CASE WHEN a.m > (SELECT avg(v) FROM nulls_b) THEN 'high' ELSE 'low' END AS band
FROM nulls_a a

-- name: nested_subqueries
SELECT id FROM nulls_a WHERE k IN (
  SELECT k FROM nulls_b WHERE v > (SELECT avg(v) FROM nulls_b))

-- name: subquery_in_from
SELECT t.k, t.n FROM (SELECT k, count(*) AS n FROM nulls_a GROUP BY k) t WHERE t.n > 3

-- name: in_subquery_multiple_uses
SELECT count(*) FROM lineitem
WHERE l_partkey IN (SELECT p_partkey FROM part WHERE p_size = 15)
  AND l_suppkey IN (SELECT s_suppkey FROM supplier WHERE s_acctbal > 0)
