-- WITH clauses: several CTEs, a CTE used twice, a CTE referencing another.

-- name: single_cte
WITH big AS (SELECT id, m FROM nulls_a WHERE m > 0)
SELECT count(*), sum(m) FROM big

-- name: two_ctes_joined
WITH a AS (SELECT k, sum(m) AS sm FROM nulls_a GROUP BY k),
     b AS (SELECT k, sum(v) AS sv FROM nulls_b GROUP BY k)
SELECT a.k, a.sm, b.sv FROM a JOIN b ON a.k = b.k

-- name: cte_used_twice
WITH per_k AS (SELECT k, count(*) AS n FROM nulls_a GROUP BY k)
SELECT x.k, x.n FROM per_k x WHERE x.n = (SELECT max(n) FROM per_k)

-- name: cte_self_join
WITH t AS (SELECT id, k, i FROM nulls_a WHERE i IS NOT NULL)
SELECT t1.id, t2.id FROM t t1 JOIN t t2 ON t1.k = t2.k AND t1.i > t2.i

-- name: cte_references_cte
WITH base AS (SELECT id, k, d FROM nulls_a WHERE d IS NOT NULL),
     agg AS (SELECT k, avg(d) AS ad FROM base GROUP BY k),
     above AS (SELECT base.id FROM base JOIN agg ON base.k = agg.k WHERE base.d > agg.ad)
SELECT id FROM above

-- name: cte_tpch_revenue
WITH revenue AS (
  SELECT l_suppkey AS supplier_no, sum(l_extendedprice * (1 - l_discount)) AS total_revenue
  FROM lineitem WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-04-01'
  GROUP BY l_suppkey)
SELECT s.s_suppkey, s.s_name, r.total_revenue
FROM supplier s JOIN revenue r ON s.s_suppkey = r.supplier_no
WHERE r.total_revenue = (SELECT max(total_revenue) FROM revenue)

-- name: cte_in_subquery
WITH keys AS (SELECT k FROM nulls_b WHERE w > 0)
SELECT id FROM nulls_a WHERE k IN (SELECT k FROM keys)

-- name: cte_union_of_ctes
WITH x AS (SELECT k FROM nulls_a), y AS (SELECT k FROM nulls_b)
SELECT k FROM x UNION SELECT k FROM y

-- name: cte_shadows_table
WITH nulls_b AS (SELECT id, k FROM nulls_a WHERE k > 5)
SELECT id, k FROM nulls_b

-- name: cte_with_ordering
WITH ranked AS (SELECT c_custkey, c_acctbal FROM customer WHERE c_acctbal > 9000)
SELECT c_custkey, c_acctbal FROM ranked ORDER BY c_acctbal DESC, c_custkey LIMIT 7
