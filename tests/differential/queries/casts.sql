-- CAST between int / bigint / double / decimal / varchar / date; COALESCE and NULLIF.

-- name: cast_int_to_double_and_bigint
SELECT id, CAST(i AS DOUBLE) AS di, CAST(i AS BIGINT) AS bi FROM nulls_a

-- name: cast_int_to_decimal
SELECT id, CAST(i AS DECIMAL(12, 2)) AS dm FROM nulls_a

-- name: cast_decimal_to_double
SELECT id, CAST(m AS DOUBLE) AS md FROM nulls_a

-- name: cast_double_to_decimal
SELECT id, CAST(d AS DECIMAL(10, 2)) AS dd FROM nulls_a

-- name: cast_decimal_rescale
SELECT id, CAST(m AS DECIMAL(12, 4)) AS wider, CAST(m AS DECIMAL(12, 1)) AS rounded FROM nulls_a

-- name: cast_decimal_to_int_truncates
-- Flink truncates toward zero; DuckDB rounds, so the oracle truncates first.
SELECT id, CAST(m AS INTEGER) AS mi FROM nulls_a
-- duckdb: SELECT id, CAST(trunc(m) AS INTEGER) AS mi FROM nulls_a

-- name: cast_double_to_int_truncates
SELECT id, CAST(d AS INTEGER) AS di, CAST(d * 7 AS BIGINT) AS d7, CAST(-d AS SMALLINT) AS nd
FROM nulls_a
-- duckdb: SELECT id, CAST(trunc(d) AS INTEGER) AS di, CAST(trunc(d * 7) AS BIGINT) AS d7,
-- duckdb:        CAST(trunc(-d) AS SMALLINT) AS nd FROM nulls_a

-- name: cast_fraction_literals_truncate
SELECT CAST(103.75 AS BIGINT) AS a, CAST(-103.75 AS INTEGER) AS b, CAST(2.5e0 AS BIGINT) AS c,
       CAST('7.9' AS INTEGER) AS d
-- duckdb: SELECT CAST(103 AS BIGINT) AS a, CAST(-103 AS INTEGER) AS b, CAST(2 AS BIGINT) AS c,
-- duckdb:        CAST(7 AS INTEGER) AS d

-- name: join_on_double_cast_truncates
-- A join key computed by a cast matches the rows Flink matches (2.5 -> 2, not 3).
SELECT a.id, b.id AS bid FROM nulls_a a JOIN nulls_a b ON CAST(a.d AS BIGINT) = b.k
-- duckdb: SELECT a.id, b.id AS bid FROM nulls_a a JOIN nulls_a b ON CAST(trunc(a.d) AS BIGINT) = b.k

-- name: cast_int_to_varchar
SELECT id, CAST(i AS VARCHAR) AS si, CAST(bi AS VARCHAR) AS sbi FROM nulls_a

-- name: cast_varchar_to_int
SELECT CAST('42' AS INTEGER) + 1 AS a, CAST('-7' AS BIGINT) AS b

-- name: cast_roundtrip_varchar_int
SELECT id, CAST(CAST(i AS VARCHAR) AS INTEGER) = i AS same FROM nulls_a

-- name: cast_varchar_to_double_and_decimal
SELECT CAST('2.5' AS DOUBLE) * 2 AS a, CAST('19.99' AS DECIMAL(10, 2)) AS b

-- name: cast_date_to_varchar
SELECT id, CAST(dt AS VARCHAR) AS sd FROM nulls_a

-- name: cast_varchar_to_date
SELECT CAST('1995-03-15' AS DATE) AS a, CAST(CAST(DATE '2000-02-29' AS VARCHAR) AS DATE) AS b

-- name: cast_bool_to_int
SELECT id, CAST(b AS INTEGER) AS bi FROM nulls_a

-- name: cast_tpch_money_to_double
SELECT o_orderkey, CAST(o_totalprice AS DOUBLE) AS p FROM orders WHERE o_orderkey < 40

-- name: cast_null_literal
SELECT CAST(NULL AS INTEGER) AS a, CAST(NULL AS VARCHAR) AS b, CAST(NULL AS DATE) AS c

-- name: coalesce_two
SELECT id, COALESCE(i, k) AS x FROM nulls_a

-- name: coalesce_many_with_literal
SELECT id, COALESCE(i, k, -1) AS x, COALESCE(s, 'none') AS y FROM nulls_a

-- name: coalesce_mixed_numeric
SELECT id, COALESCE(m, d, 0) AS x FROM nulls_a

-- name: coalesce_all_null
SELECT id, COALESCE(CAST(NULL AS INTEGER), k) AS x FROM nulls_a WHERE k IS NULL

-- name: nullif_basic
SELECT id, NULLIF(k, 4) AS x, NULLIF(s, '') AS y FROM nulls_a

-- name: nullif_guards_division
SELECT id, i / NULLIF(k - 4, 0) AS ratio FROM nulls_a

-- name: coalesce_nullif_combined
SELECT id, COALESCE(NULLIF(s, ''), '<empty>') AS label FROM nulls_a

-- name: coalesce_in_group_by
SELECT COALESCE(k, 0) AS kk, count(*) AS n FROM nulls_a GROUP BY COALESCE(k, 0)

-- name: coalesce_outer_join
SELECT a.id, COALESCE(b.v, 0) AS v FROM nulls_a a LEFT JOIN nulls_b b ON a.k = b.k
