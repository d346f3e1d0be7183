-- Simple and searched CASE, with NULL operands and missing ELSE.

-- name: searched_case
SELECT id, CASE WHEN i < 0 THEN 'neg' WHEN i = 0 THEN 'zero' WHEN i > 0 THEN 'pos' ELSE 'null' END AS sign
FROM nulls_a

-- name: searched_case_no_else
SELECT id, CASE WHEN d > 50 THEN d END AS big FROM nulls_a

-- name: simple_case
SELECT id, CASE k WHEN 1 THEN 'one' WHEN 2 THEN 'two' WHEN 3 THEN 'three' ELSE 'many' END AS word
FROM nulls_a

-- name: simple_case_null_operand_never_matches
SELECT id, CASE s WHEN NULL THEN 'null' WHEN '' THEN 'empty' ELSE 'other' END AS c FROM nulls_a

-- name: case_numeric_result_mixed
SELECT id, CASE WHEN b THEN m ELSE -m END AS signed_m FROM nulls_a

-- name: case_in_aggregate
SELECT k, sum(CASE WHEN b THEN 1 ELSE 0 END) AS trues,
       sum(CASE WHEN b IS NULL THEN 1 END) AS unknown
FROM nulls_a GROUP BY k

-- name: case_tpch_q12_like
SELECT l_shipmode,
       sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high,
       sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low
FROM orders JOIN lineitem ON o_orderkey = l_orderkey
WHERE l_receiptdate >= DATE '1994-01-01' AND l_receiptdate < DATE '1995-01-01'
GROUP BY l_shipmode

-- name: case_in_where
SELECT id FROM nulls_a WHERE CASE WHEN k IS NULL THEN i ELSE k END > 5

-- name: case_in_group_by
SELECT CASE WHEN d < 0 THEN 'neg' WHEN d >= 0 THEN 'nonneg' END AS bucket, count(*) AS n
FROM nulls_a GROUP BY CASE WHEN d < 0 THEN 'neg' WHEN d >= 0 THEN 'nonneg' END

-- name: nested_case
SELECT id, CASE WHEN k IS NULL THEN 'nk' ELSE CASE WHEN b THEN 'kt' ELSE 'kf' END END AS c
FROM nulls_a

-- name: case_tpch_q8_like_ratio
SELECT extract(year FROM o_orderdate) AS o_year,
       sum(CASE WHEN n_name = 'BRAZIL' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
         / sum(l_extendedprice * (1 - l_discount)) AS share
FROM lineitem JOIN orders ON l_orderkey = o_orderkey
JOIN supplier ON l_suppkey = s_suppkey JOIN nation ON s_nationkey = n_nationkey
GROUP BY extract(year FROM o_orderdate)
