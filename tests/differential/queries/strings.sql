-- SUBSTRING and string functions both engines define alike; NULL in, NULL out.

-- name: substring_from_for
SELECT id, SUBSTRING(s FROM 2 FOR 3) AS sub FROM nulls_a

-- name: substring_from_only
SELECT id, SUBSTRING(s FROM 3) AS tail FROM nulls_a

-- name: substring_function_form
SELECT id, SUBSTRING(s, 1, 2) AS head FROM nulls_a

-- name: substring_tpch_q22_like
SELECT SUBSTRING(c_phone FROM 1 FOR 2) AS cntrycode, count(*) AS n, sum(c_acctbal) AS total
FROM customer WHERE SUBSTRING(c_phone FROM 1 FOR 2) IN ('13', '31', '23', '29', '30', '18', '17')
GROUP BY SUBSTRING(c_phone FROM 1 FOR 2)

-- name: upper_lower
SELECT id, UPPER(s) AS up, LOWER(s) AS low FROM nulls_a

-- name: group_by_lower
SELECT LOWER(s) AS ls, count(*) AS n FROM nulls_a GROUP BY LOWER(s)

-- name: trim_both
SELECT id, TRIM(s) AS t, LENGTH(TRIM(s)) AS n FROM nulls_a

-- name: length_char_length
SELECT id, LENGTH(s) AS n, CHAR_LENGTH(s) AS c FROM nulls_a

-- name: length_tpch
SELECT p_partkey, LENGTH(p_name) AS n FROM part WHERE p_partkey < 30

-- name: concat_operator
SELECT id, s || '-' || CAST(k AS VARCHAR) AS tag FROM nulls_a

-- name: concat_operator_literals
SELECT n_name || ' / ' || r_name AS place FROM nation JOIN region ON n_regionkey = r_regionkey

-- name: concat_function_non_null_args
SELECT id, CONCAT(COALESCE(s, '?'), ':', COALESCE(CAST(i AS VARCHAR), '?')) AS tag FROM nulls_a

-- name: replace_function
SELECT id, REPLACE(s, 'p', 'P') AS r, REPLACE(s, 'apple', '') AS gone FROM nulls_a

-- name: position_in
SELECT id, POSITION('p' IN s) AS pos FROM nulls_a

-- name: strpos_function
SELECT id, STRPOS(s, 'e') AS pos FROM nulls_a

-- name: left_right
SELECT id, LEFT(s, 2) AS l, RIGHT(s, 2) AS r FROM nulls_a

-- name: string_comparison_order
SELECT id, s FROM nulls_a WHERE s IS NOT NULL ORDER BY s, id

-- name: string_functions_in_where
SELECT id FROM nulls_a WHERE UPPER(s) = 'APPLE' OR LENGTH(s) = 0

-- name: string_min_max
SELECT min(s), max(s), min(LOWER(s)), max(UPPER(s)) FROM nulls_a

-- name: string_functions_tpch
SELECT s_suppkey, UPPER(SUBSTRING(s_name FROM 10 FOR 9)) AS tail, POSITION('#' IN s_name) AS hash_at
FROM supplier WHERE s_suppkey <= 20

-- name: strings_in_json
SELECT id, UPPER(name) AS up, LENGTH(name) AS n FROM json_t
