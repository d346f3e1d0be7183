-- GROUP BY ROLLUP, CUBE and GROUPING SETS: one aggregate per grouping set with NULL for
-- the group columns the set leaves out (NULL keys of the data stay apart from those only
-- through GROUPING), and GROUPING / GROUPING_ID bits, first argument most significant.

-- name: rollup_two_keys
SELECT k, b, count(*) AS n, sum(i) AS si, avg(d) AS ad FROM nulls_a GROUP BY ROLLUP(k, b)

-- name: cube_two_keys
SELECT k, b, count(*) AS n, max(s) AS ms, count(DISTINCT i) AS di FROM nulls_a
GROUP BY CUBE(k, b)

-- name: grouping_sets_with_the_empty_set
SELECT k, b, count(*) AS n, sum(m) AS sm FROM nulls_a GROUP BY GROUPING SETS ((k), (b), ())

-- name: grouping_sets_of_pairs_and_singles
SELECT k, b, s, count(*) AS n FROM nulls_a GROUP BY GROUPING SETS ((k, b), (s), (b, s))

-- name: grouping_bits
SELECT k, b, GROUPING(k) AS gk, GROUPING(b) AS gb, GROUPING(k, b) AS gkb, count(*) AS n
FROM nulls_a GROUP BY ROLLUP(k, b)

-- name: plain_key_with_rollup
SELECT k, b, count(*) AS n, min(i) AS mi FROM nulls_a WHERE id > 3 GROUP BY k, ROLLUP(b)

-- name: rollup_of_an_expression_with_having
SELECT k % 3 AS r, b, count(*) AS n FROM nulls_a GROUP BY ROLLUP(k % 3, b)
HAVING count(*) > 2

-- name: rollup_ordered_by_grouping
SELECT k, count(*) AS n, GROUPING(k) AS g FROM nulls_a WHERE k IS NOT NULL
GROUP BY ROLLUP(k) ORDER BY g, k

-- name: rollup_over_a_join
SELECT a.k, b.s, count(*) AS n, sum(b.w) AS sw FROM nulls_a a JOIN nulls_b b ON a.k = b.k
GROUP BY ROLLUP(a.k, b.s)

-- name: rollup_in_a_subquery
SELECT count(*) AS rows_out, sum(n) AS total FROM (
  SELECT k, b, count(*) AS n FROM nulls_a GROUP BY CUBE(k, b)) t

-- name: rollup_on_empty_table
SELECT k, count(*) AS n FROM empty_t GROUP BY ROLLUP(k)
