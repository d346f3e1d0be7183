-- Flink's built-in functions against DuckDB. Where DuckDB spells the same meaning
-- differently (no TIMESTAMPADD, 1-based split_part, '' for a failed regexp_extract, ...),
-- the '-- duckdb:' lines give DuckDB's spelling; the full results must agree.

-- name: flink_concat_ws_skips_nulls
SELECT id, CONCAT_WS('-', s, CAST(k AS VARCHAR), 'x') AS a, CONCAT_WS(s, 'l', 'r') AS b
FROM nulls_a

-- name: flink_hashes
SELECT id, MD5(s) AS a, SHA256(s) AS b FROM nulls_a

-- name: flink_sha1_and_base64
SELECT id, SHA1(s) AS a, TO_BASE64(s) AS b FROM nulls_a
-- duckdb: SELECT id, sha1(s) AS a, to_base64(encode(s)) AS b FROM nulls_a

-- name: flink_regexp_replace_all_matches
SELECT id, REGEXP_REPLACE(s, '([ap])([ep])', '$2$1') AS r FROM nulls_a
-- duckdb: SELECT id, regexp_replace(s, '([ap])([ep])', '\2\1', 'g') AS r FROM nulls_a

-- name: flink_regexp_extract_null_without_match
SELECT id, REGEXP_EXTRACT(s, '([a-z])(p+)', 2) AS g, REGEXP_EXTRACT(s, 'an+') AS whole
FROM nulls_a
-- duckdb: SELECT id,
-- duckdb:   CASE WHEN regexp_matches(s, '([a-z])(p+)') THEN regexp_extract(s, '([a-z])(p+)', 2) END AS g,
-- duckdb:   CASE WHEN regexp_matches(s, 'an+') THEN regexp_extract(s, 'an+') END AS whole
-- duckdb: FROM nulls_a

-- name: flink_locate_and_trim_chars
SELECT id, LOCATE('a', s) AS a, LOCATE('a', s, 3) AS b, TRIM(BOTH 'ae' FROM s) AS c,
       TRIM(LEADING 'A' FROM s) AS d
FROM nulls_a
-- duckdb: SELECT id, strpos(s, 'a') AS a,
-- duckdb:   CASE WHEN strpos(substring(s, 3), 'a') > 0 THEN strpos(substring(s, 3), 'a') + 2
-- duckdb:        WHEN s IS NOT NULL THEN 0 END AS b,
-- duckdb:   trim(s, 'ae') AS c, ltrim(s, 'A') AS d
-- duckdb: FROM nulls_a

-- name: flink_split_index_counts_from_zero
SELECT id, SPLIT_INDEX(s, 'p', 1) AS a, SPLIT_INDEX(s, 'p', 0) AS b FROM nulls_a
-- duckdb: SELECT id,
-- duckdb:   CASE WHEN len(string_split(s, 'p')) > 1 THEN string_split(s, 'p')[2] END AS a,
-- duckdb:   string_split(s, 'p')[1] AS b
-- duckdb: FROM nulls_a

-- name: flink_ascii_chr_is_digit
SELECT id, ASCII(s) AS a, CHR(k + 64) AS c, IS_DIGIT(CAST(i AS VARCHAR)) AS dg FROM nulls_a
-- duckdb: SELECT id, CASE WHEN s = '' THEN 0 ELSE ascii(s) END AS a, chr(k + 64) AS c,
-- duckdb:   coalesce(regexp_full_match(CAST(i AS VARCHAR), '[0-9]+'), false) AS dg
-- duckdb: FROM nulls_a

-- name: flink_overlay
SELECT id, OVERLAY(s PLACING '#' FROM 2 FOR 2) AS o FROM nulls_a
-- duckdb: SELECT id, substring(s, 1, 1) || '#' || substring(s, 4) AS o FROM nulls_a

-- name: flink_log_with_base
SELECT id, LOG(2, CAST(k AS DOUBLE)) AS a, LOG(CAST(k AS DOUBLE)) AS b FROM nulls_a
-- duckdb: SELECT id, ln(CAST(k AS DOUBLE)) / ln(2.0) AS a, ln(CAST(k AS DOUBLE)) AS b FROM nulls_a

-- name: flink_timestampadd_and_diff
SELECT id, TIMESTAMPADD(MINUTE, k * 37, CAST(dt AS TIMESTAMP)) AS t,
       TIMESTAMPADD(MONTH, k, dt) AS m,
       TIMESTAMPDIFF(DAY, DATE '2020-01-31', dt) AS dd,
       TIMESTAMPDIFF(MONTH, DATE '2020-01-31', dt) AS mm
FROM nulls_a
-- duckdb: SELECT id, CAST(dt AS TIMESTAMP) + to_minutes(CAST(k * 37 AS BIGINT)) AS t,
-- duckdb:   CAST(dt + to_months(k) AS DATE) AS m,
-- duckdb:   CAST(date_sub('day', DATE '2020-01-31', dt) AS INTEGER) AS dd,
-- duckdb:   CAST(date_sub('month', DATE '2020-01-31', dt) AS INTEGER) AS mm
-- duckdb: FROM nulls_a

-- name: flink_floor_ceil_to_unit_and_date_format
SELECT id, FLOOR(TIMESTAMPADD(MINUTE, k * 37, CAST(dt AS TIMESTAMP)) TO HOUR) AS f,
       CEIL(TIMESTAMPADD(MINUTE, k * 37, CAST(dt AS TIMESTAMP)) TO HOUR) AS c,
       DATE_FORMAT(dt, 'yyyy/MM/dd') AS s
FROM nulls_a
-- duckdb: SELECT id, date_trunc('hour', CAST(dt AS TIMESTAMP) + to_minutes(CAST(k * 37 AS BIGINT))) AS f,
-- duckdb:   CASE WHEN k * 37 % 60 = 0 THEN CAST(dt AS TIMESTAMP) + to_minutes(CAST(k * 37 AS BIGINT))
-- duckdb:        ELSE date_trunc('hour', CAST(dt AS TIMESTAMP) + to_minutes(CAST(k * 37 AS BIGINT)))
-- duckdb:             + INTERVAL 1 HOUR END AS c,
-- duckdb:   strftime(dt, '%Y/%m/%d') AS s
-- duckdb: FROM nulls_a

-- name: flink_extract_shortcuts
SELECT id, YEAR(dt) AS y, QUARTER(dt) AS q, DAYOFMONTH(dt) AS d, DAYOFWEEK(dt) AS w,
       DAYOFYEAR(dt) AS dy
FROM nulls_a
-- duckdb: SELECT id, year(dt) AS y, quarter(dt) AS q, day(dt) AS d, dayofweek(dt) + 1 AS w,
-- duckdb:   dayofyear(dt) AS dy
-- duckdb: FROM nulls_a
