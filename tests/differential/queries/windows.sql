-- Window functions. Ranking and navigation functions order by a unique key within each
-- partition; RANGE frames with peers are deterministic by definition.

-- name: row_number_partitioned
SELECT id, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY id) AS rn FROM nulls_a ORDER BY id

-- name: row_number_no_partition_desc
SELECT id, ROW_NUMBER() OVER (ORDER BY d DESC NULLS LAST, id) AS rn FROM nulls_a ORDER BY id

-- name: rank_with_ties
SELECT id, k, RANK() OVER (ORDER BY k) AS r FROM nulls_a ORDER BY id

-- name: dense_rank_with_ties
SELECT id, k, DENSE_RANK() OVER (ORDER BY k DESC) AS r FROM nulls_a ORDER BY id

-- name: rank_partitioned_nulls_first
SELECT id, s, RANK() OVER (PARTITION BY s ORDER BY i NULLS FIRST) AS r,
       DENSE_RANK() OVER (PARTITION BY s ORDER BY i NULLS FIRST) AS dr
FROM nulls_a ORDER BY id

-- name: lag_lead_default
SELECT id, i, LAG(i) OVER (ORDER BY id) AS prev_i, LEAD(i) OVER (ORDER BY id) AS next_i
FROM nulls_a ORDER BY id

-- name: lag_lead_offset_default
SELECT id, k, LAG(id, 2, -1) OVER (PARTITION BY k ORDER BY id) AS prev2,
       LEAD(id, 1, 0) OVER (PARTITION BY k ORDER BY id) AS next1
FROM nulls_a ORDER BY id

-- name: lag_strings_and_dates
SELECT id, LAG(s) OVER (ORDER BY id) AS ps, LEAD(dt, 3) OVER (ORDER BY id) AS nd FROM nulls_a ORDER BY id

-- name: lag_decimal_difference
SELECT o_orderkey, o_totalprice - LAG(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderkey) AS delta
FROM orders WHERE o_custkey < 50 ORDER BY o_orderkey

-- name: running_sum_rows
SELECT id, m, SUM(m) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running
FROM nulls_a ORDER BY id

-- name: running_sum_default_frame_unique_order
SELECT id, i, SUM(i) OVER (PARTITION BY k ORDER BY id) AS running FROM nulls_a ORDER BY id

-- name: running_count_rows
SELECT id, COUNT(d) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS nd,
       COUNT(*) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS n
FROM nulls_a ORDER BY id

-- name: moving_avg_rows
SELECT id, d, AVG(d) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS mavg
FROM nulls_a ORDER BY id

-- name: centered_rows_frame
SELECT id, SUM(i) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s3,
       MIN(i) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS mn,
       MAX(i) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS mx
FROM nulls_a ORDER BY id

-- name: rows_frame_following_unbounded
SELECT id, SUM(d) OVER (PARTITION BY b ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS rest
FROM nulls_a ORDER BY id

-- name: range_frame_running_with_peers
SELECT id, k, SUM(i) OVER (ORDER BY k RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto_k
FROM nulls_a ORDER BY id

-- name: range_frame_default_with_ties
SELECT id, k, COUNT(*) OVER (ORDER BY k) AS upto FROM nulls_a ORDER BY id

-- name: range_frame_offset
SELECT id, SUM(id) OVER (ORDER BY id RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS last4
FROM nulls_a ORDER BY id

-- name: range_frame_offset_with_ties
SELECT id, k, COUNT(*) OVER (ORDER BY k RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS near
FROM nulls_a WHERE k IS NOT NULL ORDER BY id

-- name: range_frame_whole_partition
SELECT id, k, MAX(m) OVER (PARTITION BY k ORDER BY i RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS mx
FROM nulls_a ORDER BY id

-- name: aggregate_window_no_order
SELECT id, k, SUM(m) OVER (PARTITION BY k) AS total, COUNT(*) OVER (PARTITION BY k) AS n,
       AVG(d) OVER (PARTITION BY k) AS ad
FROM nulls_a ORDER BY id

-- name: aggregate_window_whole_table
SELECT id, MIN(i) OVER () AS mn, MAX(i) OVER () AS mx, COUNT(s) OVER () AS ns FROM nulls_a ORDER BY id

-- name: window_share_of_total
SELECT id, k, m, m / SUM(m) OVER (PARTITION BY k) AS share FROM nulls_a WHERE m > 0 ORDER BY id

-- name: windows_with_different_specs
SELECT id, ROW_NUMBER() OVER (ORDER BY id DESC) AS r1,
       ROW_NUMBER() OVER (PARTITION BY b ORDER BY id) AS r2,
       SUM(k) OVER (PARTITION BY b) AS sk
FROM nulls_a ORDER BY id

-- name: window_over_aggregate
SELECT k, sum(m) AS total, RANK() OVER (ORDER BY sum(m) DESC NULLS LAST) AS r
FROM nulls_a GROUP BY k ORDER BY k NULLS FIRST

-- name: window_filtered_top_per_group
SELECT id, k FROM (
  SELECT id, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY m DESC NULLS LAST, id) AS rn FROM nulls_a) t
WHERE rn <= 2 ORDER BY id

-- name: window_tpch_running_total
SELECT o_custkey, o_orderkey,
       SUM(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey
                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running
FROM orders WHERE o_custkey <= 30 ORDER BY o_custkey, o_orderkey

-- name: window_tpch_rank_nations
SELECT n_name, r_name, RANK() OVER (PARTITION BY r_name ORDER BY n_name) AS r
FROM nation JOIN region ON n_regionkey = r_regionkey ORDER BY n_name

-- name: window_dense_rank_tpch_prices
SELECT p_partkey, p_brand, DENSE_RANK() OVER (PARTITION BY p_brand ORDER BY p_retailprice DESC) AS dr
FROM part WHERE p_partkey <= 200 ORDER BY p_partkey

-- name: window_on_empty
SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn, SUM(m) OVER () AS total FROM empty_t ORDER BY id

-- name: window_in_json
SELECT id, grp, SUM(score) OVER (PARTITION BY grp ORDER BY id ROWS UNBOUNDED PRECEDING) AS running
FROM json_t ORDER BY id
