"""Correlated subqueries that need the domain rewrite, end to end: SQL through the binder,
optimizer and runtime, full results compared with DuckDB over the same Parquet files.

The tables are small and hand-made so every case is present: NULL correlation values (also
repeated, so the domain must merge them), outer values no inner row satisfies (empty
groups: COUNT 0, other aggregates NULL), an empty table, duplicated outer rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.session import connect
from flowsql.tpch.verify import compare_tables, is_ordered_query

_D = dt.date
TABLES: dict[str, pa.Table] = {
    "p": pa.table({
        "id": pa.array([1, 2, 3, 4, 5, 6, 7, 8], pa.int32()),
        "k": pa.array([1, 2, None, 2, 5, None, 9, 1], pa.int32()),
        "d": pa.array([1.5, None, -2.0, 3.25, None, 10.0, 0.0, 1.5], pa.float64()),
        "s": pa.array(["x", "y", None, "", "y", "z", None, "x"], pa.string()),
        "dt": pa.array([_D(2020, 1, 1), None, _D(2020, 3, 1), _D(2020, 1, 1), None,
                        _D(2021, 1, 1), _D(2019, 6, 1), _D(2020, 1, 1)], pa.date32()),
    }),
    "q": pa.table({
        "id": pa.array([1, 2, 3, 4, 5, 6, 7], pa.int32()),
        "k": pa.array([1, 1, 2, None, 5, 7, None], pa.int32()),
        "w": pa.array([0.5, 2.0, None, -1.0, 4.0, None, 1.5], pa.float64()),
        "s": pa.array(["x", None, "y", "z", "", "x", None], pa.string()),
        "dt": pa.array([_D(2020, 1, 1), _D(2019, 1, 1), None, _D(2020, 6, 1),
                        _D(2022, 1, 1), None, _D(2020, 2, 1)], pa.date32()),
    }),
}
TABLES["e"] = TABLES["q"].slice(0, 0)

QUERIES = {
    "count_lt_select": "SELECT p.id, (SELECT count(*) FROM q WHERE q.w < p.d) AS n FROM p",
    "sum_lte_select": "SELECT p.id, (SELECT sum(q.w) FROM q WHERE q.w <= p.d) AS n FROM p",
    "max_neq_select": "SELECT p.id, (SELECT max(q.w) FROM q WHERE q.k <> p.k) AS n FROM p",
    "count_column_gt": "SELECT p.id, (SELECT count(q.w) + 1 FROM q WHERE q.k > p.k) AS n "
                       "FROM p",
    "mixed_eq_lt": "SELECT p.id, (SELECT count(*) FROM q WHERE q.k = p.k AND q.w < p.d) AS n "
                   "FROM p",
    "string_and_date": "SELECT p.id, (SELECT count(*) FROM q WHERE q.s < p.s) AS a, "
                       "(SELECT max(q.dt) FROM q WHERE q.dt > p.dt) AS b FROM p",
    "empty_table": "SELECT p.id, (SELECT count(*) FROM e WHERE e.w < p.d) AS a, "
                   "(SELECT sum(e.w) FROM e WHERE e.w < p.d) AS b FROM p",
    "where_scalar": "SELECT p.id FROM p WHERE p.k >= (SELECT count(*) FROM q WHERE q.w < p.d)",
    "where_scalar_under_or": "SELECT p.id FROM p WHERE p.k IS NULL OR "
                             "p.d < (SELECT avg(q.w) FROM q WHERE q.w > p.d)",
    "having_scalar": "SELECT p.k, count(*) AS n FROM p GROUP BY p.k "
                     "HAVING count(*) + 1 > (SELECT count(*) FROM q WHERE q.k < p.k)",
    "exists_grouped": "SELECT p.id FROM p WHERE EXISTS (SELECT q.k FROM q WHERE q.w < p.d "
                      "GROUP BY q.k HAVING count(*) > 1)",
    "not_exists_grouped": "SELECT p.id FROM p WHERE NOT EXISTS (SELECT q.k FROM q "
                          "WHERE q.w < p.d GROUP BY q.k HAVING count(*) > 1)",
    "in_grouped": "SELECT p.id FROM p WHERE p.k IN (SELECT q.k FROM q WHERE q.w < p.d "
                  "GROUP BY q.k)",
    "not_in_grouped": "SELECT p.id FROM p WHERE p.k NOT IN (SELECT q.k FROM q "
                      "WHERE q.w < p.d GROUP BY q.k)",
    "in_select_list": "SELECT p.id, p.k IN (SELECT q.k FROM q WHERE q.w < p.d GROUP BY q.k) "
                      "AS hit FROM p",
    "outer_in_select_list": "SELECT p.id FROM p WHERE p.k IN (SELECT q.k + p.k - 1 FROM q)",
    "outer_in_aggregate": "SELECT p.id, (SELECT sum(q.w * p.d) FROM q WHERE q.k = p.k) AS n "
                          "FROM p",
    "limit_order": "SELECT p.id, (SELECT q.w FROM q WHERE q.k = p.k ORDER BY q.id LIMIT 1) "
                   "AS n FROM p",
    "limit_offset": "SELECT p.id, (SELECT q.id FROM q WHERE q.w < p.d ORDER BY q.id "
                    "LIMIT 1 OFFSET 1) AS n FROM p",
    "exists_limit_offset": "SELECT p.id FROM p WHERE EXISTS (SELECT 1 FROM q WHERE q.w < p.d "
                           "ORDER BY q.id LIMIT 1 OFFSET 2)",
    "nested_two_levels": "SELECT p.id, (SELECT count(*) FROM q WHERE q.w < p.d AND q.k >= "
                         "(SELECT min(r.k) FROM q r WHERE r.w >= q.w AND r.w <= p.d)) AS n "
                         "FROM p",
    "nested_outer_only": "SELECT p.id, (SELECT sum(q.w) FROM q WHERE q.k = p.k AND q.w <= "
                         "(SELECT max(r.w) FROM q r WHERE r.w <= p.d + 1)) AS n FROM p",
    "union_inside": "SELECT p.id FROM p WHERE p.s IN (SELECT q.s FROM q WHERE q.w < p.d "
                    "UNION SELECT r.s FROM q r WHERE r.k = p.k)",
    "window_inside": "SELECT p.id, (SELECT max(x.r) FROM (SELECT row_number() OVER "
                     "(ORDER BY q.id) AS r FROM q WHERE q.w < p.d) x) AS n FROM p",
    "correlated_join_sides": "SELECT p.id, (SELECT count(*) FROM q JOIN q r ON r.k = q.k "
                             "WHERE q.w < p.d AND r.w > p.d) AS n FROM p",
    "correlated_left_join": "SELECT p.id, (SELECT count(r.id) FROM q LEFT JOIN q r "
                            "ON r.k = q.k AND r.w < p.d) AS n FROM p",
    "ordered_result": "SELECT p.id, (SELECT count(*) FROM q WHERE q.w < p.d) AS n FROM p "
                      "ORDER BY n DESC, p.id",
}


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    directory: Path = tmp_path_factory.mktemp("domain")
    session = connect()
    con = duckdb.connect()
    for name, table in TABLES.items():
        path = directory / f"{name}.parquet"
        pq.write_table(table, path)
        session.sql(f"CREATE TABLE {name} WITH ('connector'='filesystem', "
                    f"'path'='{path}', 'format'='parquet')")
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    yield session, con
    session.close()
    con.close()


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_matches_duckdb(engines: tuple[Any, Any], name: str) -> None:
    session, con = engines
    sql = QUERIES[name]
    expected = con.sql(sql).to_arrow_table()
    actual = session.sql(sql).to_arrow()
    differences = compare_tables(actual, expected, ordered=is_ordered_query(sql))
    assert differences == [], f"{name}:\n{sql}\n" + "\n".join(differences[:20])
