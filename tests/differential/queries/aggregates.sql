-- Aggregates with and without GROUP BY, on empty input, DISTINCT and FILTER; NULLs are
-- ignored by every aggregate except count(*).

-- name: global_aggregates_nulls
SELECT count(*), count(i), sum(i), avg(i), min(i), max(i) FROM nulls_a

-- name: global_aggregates_decimal
SELECT count(m), sum(m), avg(m), min(m), max(m) FROM nulls_a

-- name: global_aggregates_double
SELECT count(d), sum(d), avg(d), min(d), max(d) FROM nulls_a

-- name: global_aggregates_bigint
SELECT sum(bi), min(bi), max(bi), count(DISTINCT bi) FROM nulls_a

-- name: aggregates_on_empty_table
SELECT count(*), count(k), sum(k), avg(d), min(s), max(m) FROM empty_t

-- name: aggregates_on_filtered_to_empty
SELECT count(*), sum(m), max(dt) FROM nulls_a WHERE id > 1000

-- name: group_by_on_empty_table
SELECT k, count(*) FROM empty_t GROUP BY k

-- name: group_by_null_key
SELECT k, count(*) AS n, count(i) AS ni, sum(d) AS sd FROM nulls_a GROUP BY k

-- name: group_by_two_keys
SELECT k, b, count(*) AS n, max(s) AS ms FROM nulls_a GROUP BY k, b

-- name: count_distinct
SELECT count(DISTINCT k), count(DISTINCT s), count(DISTINCT b) FROM nulls_a

-- name: count_distinct_grouped
SELECT k, count(DISTINCT s) AS ds, count(s) AS cs FROM nulls_a GROUP BY k

-- name: sum_distinct
SELECT sum(DISTINCT k), sum(DISTINCT m), avg(DISTINCT k) FROM nulls_a

-- name: sum_distinct_grouped
SELECT b, sum(DISTINCT k) AS sk, count(DISTINCT k) AS ck FROM nulls_a GROUP BY b

-- name: mixed_distinct_and_plain
SELECT k, count(DISTINCT b) AS db, count(*) AS n, sum(i) AS si FROM nulls_a GROUP BY k

-- name: filter_clause
SELECT count(*) FILTER (WHERE b) AS t, count(*) FILTER (WHERE NOT b) AS f,
       sum(m) FILTER (WHERE m > 0) AS pos
FROM nulls_a

-- name: filter_clause_grouped
SELECT k, count(*) FILTER (WHERE i > 0) AS pos, avg(d) FILTER (WHERE s IS NOT NULL) AS ad
FROM nulls_a GROUP BY k

-- name: filter_clause_on_empty
SELECT count(*) FILTER (WHERE k > 0), sum(m) FILTER (WHERE k > 0) FROM empty_t

-- name: min_max_strings_dates_bools
SELECT k, min(s) AS mins, max(s) AS maxs, min(dt) AS mind, max(dt) AS maxd FROM nulls_a GROUP BY k

-- name: aggregate_expression_args
SELECT k, sum(i * 2 + 1) AS x, max(d - i) AS y, sum(m * 2) AS z FROM nulls_a GROUP BY k

-- name: aggregate_of_all_null_group
SELECT k, sum(bi) AS s, avg(bi) AS a FROM nulls_a WHERE bi IS NULL GROUP BY k

-- name: tpch_q1_full
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM lineitem WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus

-- name: count_distinct_tpch
SELECT l_returnflag, count(DISTINCT l_orderkey) AS orders, count(DISTINCT l_suppkey) AS supps
FROM lineitem GROUP BY l_returnflag

-- name: aggregate_in_csv
SELECT item, count(*) AS n, count(qty) AS nq, sum(qty) AS sq, sum(price) AS sp FROM csv_t GROUP BY item

-- name: aggregate_in_json
SELECT grp, count(*) AS n, count(name) AS nn, avg(score) AS a,
       count(*) FILTER (WHERE flag) AS flagged
FROM json_t GROUP BY grp

-- name: aggregate_constant_and_count_star
SELECT count(*), count(1), sum(1) FROM nulls_b

-- name: aggregate_then_arithmetic
SELECT k, sum(m) / count(m) AS manual_avg, max(i) - min(i) AS spread FROM nulls_a GROUP BY k
