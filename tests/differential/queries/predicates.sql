-- LIKE / NOT LIKE, IN lists (with NULL in the list), BETWEEN / NOT BETWEEN, IS [NOT] NULL,
-- three-valued AND / OR / NOT.

-- name: like_prefix
SELECT id, s FROM nulls_a WHERE s LIKE 'a%'

-- name: like_suffix_case_sensitive
SELECT id, s FROM nulls_a WHERE s LIKE '%e'

-- name: like_underscore
SELECT id, s FROM nulls_a WHERE s LIKE '_pple'

-- name: like_contains_space
SELECT id, s FROM nulls_a WHERE s LIKE '% %'

-- name: like_match_everything_but_null
SELECT id FROM nulls_a WHERE s LIKE '%'

-- name: like_empty_pattern
SELECT id FROM nulls_a WHERE s LIKE ''

-- name: not_like
SELECT id, s FROM nulls_a WHERE s NOT LIKE '%a%'

-- name: like_as_value
SELECT id, s LIKE 'c%' AS starts_c, s NOT LIKE '%e%' AS no_e FROM nulls_a

-- name: like_tpch
SELECT p_partkey, p_type FROM part WHERE p_type LIKE '%BRASS' AND p_size = 15

-- name: not_like_tpch
SELECT count(*) FROM supplier WHERE s_comment NOT LIKE '%Customer%Complaints%'

-- name: in_list_ints
SELECT id, k FROM nulls_a WHERE k IN (1, 3, 5)

-- name: in_list_with_null
SELECT id, k FROM nulls_a WHERE k IN (1, NULL, 5)

-- name: not_in_list_with_null_is_empty
SELECT id FROM nulls_a WHERE k NOT IN (1, NULL)

-- name: not_in_list
SELECT id, k FROM nulls_a WHERE k NOT IN (1, 2, 3)

-- name: in_list_as_value_with_null
SELECT id, k IN (2, 4, NULL) AS hit, k NOT IN (2, 4) AS miss FROM nulls_a

-- name: in_list_strings
SELECT id, s FROM nulls_a WHERE s IN ('apple', '', 'zeta')

-- name: in_list_dates
SELECT id FROM nulls_a WHERE dt IN (DATE '2020-02-29', DATE '2021-12-31')

-- name: between_ints
SELECT id, i FROM nulls_a WHERE i BETWEEN -10 AND 10

-- name: not_between
SELECT id, i FROM nulls_a WHERE i NOT BETWEEN -10 AND 10

-- name: between_as_value
SELECT id, d BETWEEN 0 AND 50 AS inside FROM nulls_a

-- name: between_decimals
SELECT id, m FROM nulls_a WHERE m BETWEEN -100.50 AND 300

-- name: between_dates
SELECT o_orderkey FROM orders WHERE o_orderdate BETWEEN DATE '1995-03-01' AND DATE '1995-03-05'

-- name: between_strings
SELECT id, s FROM nulls_a WHERE s BETWEEN 'b' AND 'd'

-- name: is_null_is_not_null
SELECT id, k IS NULL AS k_null, s IS NOT NULL AS s_known FROM nulls_a

-- name: three_valued_logic
SELECT id, b AND i > 0 AS both_true, b OR i > 0 AS either, NOT b AS negated FROM nulls_a

-- name: where_not_of_unknown
SELECT id FROM nulls_a WHERE NOT (i > 0)

-- name: where_or_with_nulls
SELECT id FROM nulls_a WHERE k = 2 OR s = 'zeta' OR d IS NULL

-- name: comparisons_to_null_literal
SELECT count(*) FROM nulls_a WHERE k = NULL OR k <> NULL

-- name: boolean_column_filter
SELECT id FROM nulls_a WHERE b

-- name: is_distinct_from
SELECT a.id, b.id FROM nulls_a a JOIN nulls_b b ON a.k IS NOT DISTINCT FROM b.k WHERE a.id < 8
