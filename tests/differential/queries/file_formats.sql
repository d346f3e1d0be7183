-- Tables read from CSV (header skipped, empty fields are NULL) and newline-delimited JSON
-- with declared column lists.

-- name: csv_select_all
SELECT id, item, qty, price, sold_on FROM csv_t

-- name: csv_filter_nulls
SELECT id FROM csv_t WHERE qty IS NULL OR price IS NULL

-- name: csv_join_json
SELECT c.id, c.item, j.name FROM csv_t c JOIN json_t j ON c.id = j.id WHERE j.flag

-- name: csv_ordered
SELECT id, item, qty FROM csv_t ORDER BY qty DESC NULLS LAST, id

-- name: json_select_all
SELECT id, name, score, flag, grp FROM json_t

-- name: json_null_handling
SELECT id, COALESCE(name, '-') AS n, score IS NULL AS no_score, NOT flag AS unflag FROM json_t

-- name: json_left_join_csv
SELECT j.id, j.grp, c.qty FROM json_t j LEFT JOIN csv_t c ON j.grp = c.qty

-- name: json_union_csv
SELECT id, name FROM json_t UNION ALL SELECT id + 100, item FROM csv_t
