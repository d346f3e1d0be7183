-- Date and interval arithmetic, date - date, EXTRACT. DuckDB's date + interval is a
-- TIMESTAMP, so results shown as values are cast back to DATE.

-- name: date_plus_interval_day
SELECT id, CAST(dt + INTERVAL '10' DAY AS DATE) AS later FROM nulls_a

-- name: date_minus_interval_day
SELECT id, CAST(dt - INTERVAL '45' DAY AS DATE) AS earlier FROM nulls_a

-- name: date_plus_interval_month_end_of_month
SELECT id, dt, CAST(dt + INTERVAL '1' MONTH AS DATE) AS next_month FROM nulls_a

-- name: date_minus_interval_month
SELECT id, CAST(dt - INTERVAL '3' MONTH AS DATE) AS q_before FROM nulls_a

-- name: date_plus_interval_year_leap_day
SELECT id, CAST(dt + INTERVAL '1' YEAR AS DATE) AS next_year FROM nulls_a

-- name: date_literal_interval_arithmetic
SELECT CAST(DATE '2020-01-31' + INTERVAL '1' MONTH AS DATE) AS a,
       CAST(DATE '2020-02-29' + INTERVAL '1' YEAR AS DATE) AS b,
       CAST(DATE '2021-03-31' - INTERVAL '1' MONTH AS DATE) AS c,
       CAST(DATE '2020-12-31' + INTERVAL '1' DAY AS DATE) AS d

-- name: interval_in_where_tpch_q1_like
SELECT l_returnflag, l_linestatus, count(*) AS n, sum(l_quantity) AS qty
FROM lineitem WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY
GROUP BY l_returnflag, l_linestatus

-- name: interval_month_range_tpch
SELECT count(*) FROM orders
WHERE o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1994-01-01' + INTERVAL '3' MONTH

-- name: interval_year_range_tpch
SELECT count(*), sum(l_extendedprice * l_discount) FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1994-01-01' + INTERVAL '1' YEAR

-- name: date_minus_date
SELECT a.id, b.id, a.dt - b.dt AS days FROM nulls_a a JOIN nulls_b b ON a.k = b.k

-- name: date_minus_date_tpch
SELECT l_orderkey, l_linenumber, l_receiptdate - l_shipdate AS transit
FROM lineitem WHERE l_orderkey < 100

-- name: date_diff_aggregate
SELECT l_shipmode, max(l_receiptdate - l_commitdate) AS worst, min(l_receiptdate - l_commitdate) AS best
FROM lineitem GROUP BY l_shipmode

-- name: date_comparisons_with_nulls
SELECT id FROM nulls_a WHERE dt > DATE '2020-06-30'

-- name: extract_parts
SELECT id, EXTRACT(YEAR FROM dt) AS y, EXTRACT(MONTH FROM dt) AS m, EXTRACT(DAY FROM dt) AS d
FROM nulls_a

-- name: extract_quarter
SELECT id, EXTRACT(QUARTER FROM dt) AS q FROM nulls_a

-- name: extract_group_by_year_month
SELECT EXTRACT(YEAR FROM o_orderdate) AS y, EXTRACT(MONTH FROM o_orderdate) AS m, count(*) AS n
FROM orders GROUP BY EXTRACT(YEAR FROM o_orderdate), EXTRACT(MONTH FROM o_orderdate)

-- name: extract_in_where
SELECT o_orderkey FROM orders
WHERE EXTRACT(YEAR FROM o_orderdate) = 1996 AND EXTRACT(MONTH FROM o_orderdate) = 2
  AND EXTRACT(DAY FROM o_orderdate) < 3

-- name: extract_quarter_tpch
SELECT EXTRACT(QUARTER FROM o_orderdate) AS q, count(*) AS n FROM orders
GROUP BY EXTRACT(QUARTER FROM o_orderdate)

-- name: date_min_max
SELECT k, min(dt) AS first_day, max(dt) AS last_day FROM nulls_a GROUP BY k

-- name: date_cast_from_string
SELECT id FROM nulls_a WHERE dt = CAST('2020-02-29' AS DATE)

-- name: date_in_csv
SELECT id, sold_on, EXTRACT(MONTH FROM sold_on) AS m, CAST(sold_on + INTERVAL '7' DAY AS DATE) AS wk
FROM csv_t
