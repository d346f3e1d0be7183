-- Exact decimal money math, integer and double math, division (float, as in DuckDB),
-- modulo, negatives, ABS / ROUND / FLOOR / CEIL.

-- name: decimal_add_sub_mul
SELECT id, m + 1.05 AS a, m - m AS z, m * 3 AS t, m * m AS sq FROM nulls_a

-- name: decimal_mixed_with_decimal
SELECT a.id, b.id, a.m + b.v AS s, a.m * b.v AS p FROM nulls_a a JOIN nulls_b b ON a.k = b.k

-- name: decimal_sum_of_products_tpch
SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24

-- name: decimal_money_math_grouped_tpch
SELECT l_returnflag, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS charge,
       sum(l_quantity * l_extendedprice) AS big
FROM lineitem GROUP BY l_returnflag

-- name: decimal_supplycost_tpch
SELECT ps_suppkey, sum(ps_supplycost * ps_availqty) AS stock_value FROM partsupp
WHERE ps_suppkey <= 10 GROUP BY ps_suppkey

-- name: decimal_negation_and_compare
SELECT id, -m AS neg, m < 0 AS is_neg FROM nulls_a

-- name: decimal_times_integer_column
SELECT id, m * i AS x, m * k AS y FROM nulls_a

-- name: decimal_plus_double_is_double
SELECT id, m + d AS x FROM nulls_a

-- name: integer_math
SELECT id, i + k AS a, i - k AS s, i * k AS p, -i AS n FROM nulls_a

-- name: bigint_math
SELECT id, bi + i AS a, bi - 1 AS s, bi * 2 AS p FROM nulls_a

-- name: integer_division_is_double
SELECT id, i / k AS q FROM nulls_a WHERE k IS NOT NULL

-- name: integer_division_literals
SELECT 7 / 2 AS a, -7 / 2 AS b, 1 / 4 AS c, 10 / 5 AS d

-- name: decimal_division
SELECT id, m / 4 AS q, m / k AS r FROM nulls_a WHERE k IS NOT NULL

-- name: double_math
SELECT id, d * 2 AS a, d / 4 AS b, d - i AS c, d * d AS e FROM nulls_a

-- name: modulo_with_negatives
SELECT id, i % 7 AS r, i % -7 AS rn, -i % 7 AS nr FROM nulls_a

-- name: modulo_by_column
SELECT id, i % k AS r FROM nulls_a WHERE k IS NOT NULL

-- name: abs_values
SELECT id, ABS(i) AS ai, ABS(d) AS ad, ABS(m) AS am, ABS(bi) AS abi FROM nulls_a

-- name: round_decimal
SELECT id, ROUND(m, 1) AS r1, ROUND(m, 0) AS r0, ROUND(m) AS r FROM nulls_a

-- name: round_double
SELECT id, ROUND(d / 3, 2) AS r2, ROUND(d) AS r FROM nulls_a

-- name: round_half_away_from_zero
SELECT ROUND(2.5) AS a, ROUND(-2.5) AS b, ROUND(0.125, 2) AS c, ROUND(-0.125, 2) AS d

-- name: floor_ceil_double
SELECT id, FLOOR(d) AS f, CEIL(d) AS c, FLOOR(d / 10) AS f10 FROM nulls_a

-- name: floor_ceil_decimal
SELECT id, FLOOR(m) AS f, CEIL(m) AS c FROM nulls_a

-- name: floor_ceil_integer
SELECT id, FLOOR(i) AS f, CEIL(i) AS c FROM nulls_a

-- name: arithmetic_precedence
SELECT id, i + k * 2 AS a, (i + k) * 2 AS b, i - k - 1 AS c, i * 2 % 5 AS d FROM nulls_a

-- name: arithmetic_in_predicate
SELECT id FROM nulls_a WHERE i * 2 + k > 20 OR d / 2 < -30

-- name: unary_minus_literals
SELECT -5 + 3 AS a, -(-4) AS b, 2 - -2 AS c, -1.50 * 2 AS d

-- name: avg_of_integers_is_double
SELECT k, avg(i) AS a, sum(i) / count(i) AS b FROM nulls_a GROUP BY k

-- name: arithmetic_on_csv_doubles
SELECT id, qty * price AS total, price / 4 AS quarter, -qty AS neg FROM csv_t

-- name: decimal_literal_arithmetic
SELECT CAST(0.10 AS DECIMAL(10, 2)) + CAST(0.20 AS DECIMAL(10, 2)) AS a,
       CAST(1.10 AS DECIMAL(10, 2)) * CAST(3 AS DECIMAL(10, 2)) AS b

-- name: tpch_q14_like_ratio
SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
       / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM lineitem JOIN part ON l_partkey = p_partkey
WHERE l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01'
