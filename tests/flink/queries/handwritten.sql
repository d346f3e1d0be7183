-- Hand-written queries of the Flink differential corpus: functions in filters and
-- projections, and operator combinations the generated variations do not cover.
-- Tables: see tests/flink/flink_corpus.py.

-- name: proj_all_orders
SELECT * FROM orders;

-- name: filter_amount
SELECT order_id, user_id, amount FROM orders WHERE amount > 50 AND product <> 'fig';

-- name: filter_in_between
SELECT order_id, qty FROM orders WHERE qty IN (1, 3) OR amount BETWEEN 10 AND 20;

-- name: filter_like
SELECT bid_id, item, user_id FROM bids WHERE user_id LIKE 'u%' AND item NOT LIKE '%4';

-- name: filter_null
SELECT order_id, qty IS NULL AS missing FROM orders WHERE qty IS NULL OR qty > 4;

-- name: proj_arith
SELECT order_id, qty * 2 + 1 AS a, amount / 4 AS b, qty % 3 AS c, -amount AS d,
       MOD(order_id, 7) AS e
FROM orders;

-- name: proj_int_division
SELECT order_id, qty / 2 AS half, order_id / 3 AS third FROM orders;

-- name: proj_math
SELECT order_id, ABS(amount - 50) AS a, ROUND(amount, 1) AS r, FLOOR(amount) AS f,
       CEIL(amount) AS c, POWER(qty, 2) AS p, SQRT(amount) AS s, SIGN(amount - 50) AS sg
FROM orders;

-- name: proj_math_log
SELECT order_id, LN(amount) AS l, LOG10(amount) AS l10, EXP(qty) AS e
FROM orders WHERE qty IS NOT NULL;

-- name: proj_round_ints
SELECT bid_id, ROUND(price, -1) AS r, TRUNCATE(price / 7.0, 2) AS t FROM bids;

-- name: proj_strings
SELECT order_id, UPPER(product) AS u, LOWER(user_id) AS l, CHAR_LENGTH(product) AS n,
       CONCAT(user_id, '-', product) AS c, SUBSTRING(product FROM 2 FOR 2) AS s
FROM orders;

-- name: proj_strings2
SELECT order_id, TRIM(BOTH 'p' FROM product) AS t, REPLACE(product, 'p', 'P') AS r,
       POSITION('l' IN product) AS pos, LPAD(user_id, 5, '*') AS lp,
       RPAD(product, 6, '.') AS rp
FROM orders;

-- name: proj_strings3
SELECT order_id, INITCAP(product) AS i, REVERSE(product) AS r, REPEAT(user_id, 2) AS rp,
       CONCAT_WS('/', user_id, product) AS cw, LEFT(product, 2) AS lf, RIGHT(product, 2) AS rt
FROM orders;

-- name: proj_case
SELECT order_id,
       CASE WHEN amount < 20 THEN 'small' WHEN amount < 60 THEN 'mid' ELSE 'large' END AS size,
       CASE product WHEN 'fig' THEN 1 WHEN 'pear' THEN 2 ELSE 0 END AS code
FROM orders;

-- name: proj_coalesce
SELECT order_id, COALESCE(qty, -1) AS q, NULLIF(qty, 3) AS n, IF(qty > 2, 'many', 'few') AS f
FROM orders;

-- name: proj_cast_double_bigint
SELECT order_id, CAST(amount AS BIGINT) AS b, CAST(amount AS INT) AS i FROM orders;

-- name: proj_cast_string
SELECT order_id, CAST(qty AS STRING) AS s, CAST(order_id AS DOUBLE) AS d,
       CAST(CAST(qty AS STRING) AS INT) AS back
FROM orders;

-- name: proj_cast_decimal
SELECT order_id, CAST(amount AS DECIMAL(10, 1)) AS d, CAST(amount AS DECIMAL(10, 2)) * qty AS t
FROM orders;

-- name: proj_cast_ts
SELECT order_id, CAST(ts AS DATE) AS d, CAST(ts AS STRING) AS s FROM orders;

-- name: proj_extract
SELECT order_id, EXTRACT(SECOND FROM ts) AS s, EXTRACT(MINUTE FROM ts) AS m,
       HOUR(ts) AS h, DAYOFMONTH(ts) AS dm, YEAR(ts) AS y
FROM orders;

-- name: proj_floor_ts
SELECT order_id, FLOOR(ts TO SECOND) AS fs, FLOOR(ts TO MINUTE) AS fm,
       CEIL(ts TO SECOND) AS cs
FROM orders;

-- name: proj_timestampadd
SELECT order_id, TIMESTAMPADD(SECOND, 30, ts) AS later, TIMESTAMPADD(MINUTE, -1, ts) AS earlier,
       ts + INTERVAL '2' SECOND AS plus2
FROM orders;

-- name: proj_timestampdiff
SELECT order_id, TIMESTAMPDIFF(SECOND, TIMESTAMP '2024-01-01 00:00:00', ts) AS secs
FROM orders;

-- name: proj_date_format
SELECT order_id, DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') AS f, DATE_FORMAT(ts, 'HH:mm') AS hm
FROM orders;

-- name: proj_to_timestamp
SELECT order_id, TO_TIMESTAMP('2024-01-01 00:00:30', 'yyyy-MM-dd HH:mm:ss') AS t0,
       ts > TO_TIMESTAMP('2024-01-01 00:00:30') AS after
FROM orders;

-- name: proj_boolean
SELECT order_id, qty > 2 AND amount > 50 AS both_big, NOT (qty = 1) AS not_one,
       qty > 2 IS TRUE AS t, qty > 2 IS UNKNOWN AS u
FROM orders;

-- name: proj_hash_functions
SELECT order_id, MD5(product) AS m, CHAR_LENGTH(SHA256(product)) AS n FROM orders;

-- name: wagg_window_time_cascade
WITH per_user AS (
  SELECT user_id, window_time AS ts, COUNT(*) AS c
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
  GROUP BY user_id, window_start, window_end, window_time)
SELECT window_start, window_end, SUM(c) AS total, MAX(c) AS most
FROM TABLE(TUMBLE(TABLE per_user, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;

-- name: wagg_cascade_same_window
SELECT window_start, window_end, SUM(c) AS total, COUNT(*) AS users
FROM (SELECT user_id, window_start, window_end, COUNT(*) AS c
      FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
      GROUP BY user_id, window_start, window_end)
GROUP BY window_start, window_end;

-- name: wagg_window_time
SELECT user_id, window_start, window_end, window_time, COUNT(*) AS c
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY user_id, window_start, window_end, window_time;

-- name: wagg_filter_before
SELECT product, window_start, window_end, SUM(amount) AS s
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
WHERE qty IS NOT NULL AND amount > 10
GROUP BY product, window_start, window_end;

-- name: wagg_expression_key
SELECT UPPER(user_id) AS u, window_start, window_end, COUNT(*) AS c, SUM(amount * 2) AS s2
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY UPPER(user_id), window_start, window_end;

-- name: wagg_having
SELECT user_id, window_start, window_end, COUNT(*) AS c
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end
HAVING COUNT(*) > 2;

-- name: wagg_grouping_sets
SELECT user_id, product, window_start, window_end, COUNT(*) AS c
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, GROUPING SETS ((user_id), (product), ());

-- name: wagg_rollup
SELECT user_id, product, window_start, window_end, SUM(amount) AS s
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, ROLLUP (user_id, product);

-- name: wagg_cube
SELECT user_id, product, window_start, window_end, COUNT(*) AS c
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '20' SECOND))
GROUP BY window_start, window_end, CUBE (user_id, product);

-- name: wagg_first_last_value
SELECT user_id, window_start, window_end, FIRST_VALUE(amount) AS fv, LAST_VALUE(amount) AS lv
FROM TABLE(TUMBLE(TABLE orders_ok, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end;

-- name: wagg_listagg
SELECT user_id, window_start, window_end, COUNT(*) AS c, LISTAGG(product, ';') AS ps
FROM TABLE(TUMBLE(TABLE orders_ok, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY user_id, window_start, window_end;

-- name: wagg_hop_w0_bids
SELECT window_start, window_end, COUNT(*) AS c, MIN(price) AS mn
FROM TABLE(HOP(TABLE bids_w0, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
GROUP BY window_start, window_end;

-- name: wagg_session_global_w5
SELECT window_start, window_end, COUNT(*) AS c
FROM TABLE(SESSION(TABLE clicks_w5, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end;

-- name: wtvf_rows
SELECT order_id, window_start, window_end, window_time
FROM TABLE(HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND));

-- name: gagg_group_by_expression
SELECT CHAR_LENGTH(product) AS n, COUNT(*) AS c, SUM(qty) AS q FROM orders
GROUP BY CHAR_LENGTH(product);

-- name: gagg_grouping_sets
SELECT user_id, product, COUNT(*) AS c FROM orders
GROUP BY GROUPING SETS ((user_id), (product), ());

-- name: gagg_distinct_select
SELECT DISTINCT user_id, product FROM orders;

-- name: gagg_count_distinct_multi
SELECT user_id, COUNT(DISTINCT product) AS p, COUNT(DISTINCT qty) AS q, COUNT(*) AS c
FROM orders GROUP BY user_id;

-- name: gagg_over_join
SELECT o.user_id, COUNT(*) AS c, SUM(b.price) AS s
FROM orders_ok AS o JOIN bids_ok AS b ON o.user_id = b.user_id AND o.product = 'fig'
GROUP BY o.user_id;

-- name: gagg_max_of_window_counts
SELECT user_id, MAX(c) AS peak, COUNT(*) AS windows
FROM (SELECT user_id, window_start, COUNT(*) AS c
      FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
      GROUP BY user_id, window_start, window_end)
GROUP BY user_id;

-- name: join_three_way
SELECT o.order_id, b.bid_id, c.url
FROM orders_ok AS o
JOIN bids_ok AS b ON o.user_id = b.user_id AND o.qty = 1
JOIN clicks_ok AS c ON b.user_id = c.user_id AND c.dur > 110;

-- name: join_non_equi_filter
SELECT o.order_id, c.url
FROM orders AS o JOIN clicks AS c ON o.user_id = c.user_id AND c.dur < o.amount / 10;

-- name: join_semi_in
SELECT order_id, user_id FROM orders
WHERE user_id IN (SELECT user_id FROM clicks WHERE url = '/pay' AND dur > 100);

-- name: join_anti_not_exists
SELECT order_id, user_id FROM orders AS o
WHERE NOT EXISTS (SELECT 1 FROM bids AS b WHERE b.user_id = o.user_id AND b.price > 495);

-- name: ijoin_with_window_agg
WITH pairs AS (
  SELECT o.ts, o.order_id FROM orders_ok AS o JOIN clicks_ok AS c
  ON o.user_id = c.user_id AND c.ts BETWEEN o.ts - INTERVAL '1' SECOND AND o.ts)
SELECT window_start, window_end, COUNT(*) AS pairs
FROM TABLE(TUMBLE(TABLE pairs, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;

-- name: topn_global
SELECT * FROM (SELECT order_id, amount, ROW_NUMBER() OVER (ORDER BY amount DESC) AS rn
               FROM orders) WHERE rn <= 5;

-- name: topn_no_rank_column
SELECT order_id, user_id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY amount DESC) AS rn FROM orders)
WHERE rn <= 2;

-- name: topn_order_by_limit
SELECT order_id, amount FROM orders ORDER BY amount DESC LIMIT 3;

-- name: topn_over_group
SELECT * FROM (
  SELECT product, user_id, c, ROW_NUMBER() OVER (PARTITION BY product ORDER BY c DESC, user_id) AS rn
  FROM (SELECT product, user_id, COUNT(*) AS c FROM orders GROUP BY product, user_id))
WHERE rn = 1;

-- name: dedup_keep_first_bids
SELECT bid_id, item, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY item, user_id ORDER BY ts) AS rn FROM bids)
WHERE rn = 1;

-- name: wtopn_rows_session_like_tumble20
SELECT * FROM (
  SELECT user_id, url, dur, window_start, window_end,
    ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY dur DESC, user_id, url) AS rn
  FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '20' SECOND)))
WHERE rn <= 3;

-- name: over_lag
SELECT order_id, user_id, amount, LAG(amount) OVER (PARTITION BY user_id ORDER BY ts) AS before_amount
FROM orders_ok;

-- name: over_count_distinct
SELECT order_id, user_id, COUNT(DISTINCT product) OVER (PARTITION BY user_id ORDER BY ts
  RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS dp
FROM orders;

-- name: over_named_window
SELECT order_id, SUM(amount) OVER w AS s
FROM orders WINDOW w AS (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW);

-- name: over_no_partition
SELECT bid_id, ts, SUM(price) OVER (ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS s
FROM bids;

-- name: over_two_aggs_expressions
SELECT order_id, user_id, amount - AVG(amount) OVER w AS delta, MAX(qty) OVER w * 2 AS mq
FROM orders WINDOW w AS (PARTITION BY user_id ORDER BY ts
  ROWS BETWEEN 3 PRECEDING AND CURRENT ROW);

-- name: over_then_filter
SELECT * FROM (
  SELECT order_id, user_id, amount, SUM(amount) OVER (PARTITION BY user_id ORDER BY ts
    RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW) AS s FROM orders)
WHERE s > 100;

-- name: union_three
SELECT user_id, 'o' AS src FROM orders WHERE amount > 90
UNION ALL SELECT user_id, 'b' AS src FROM bids WHERE price > 480
UNION ALL SELECT user_id, 'c' AS src FROM clicks WHERE dur > 115;

-- name: union_then_group
SELECT user_id, COUNT(*) AS c FROM (
  SELECT user_id FROM orders UNION ALL SELECT user_id FROM bids) GROUP BY user_id;

-- name: union_windowed_results
SELECT user_id, window_start, window_end, COUNT(*) AS c, 'o' AS src
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end
UNION ALL
SELECT user_id, window_start, window_end, COUNT(*) AS c, 'c' AS src
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end;

-- name: values_like_constants
SELECT order_id, 1 + 2 AS three, 'x' AS s, CAST(NULL AS INT) AS n, TRUE AS t FROM orders
WHERE order_id < 1005;
