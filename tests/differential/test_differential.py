"""Every query in queries/*.sql runs on flowsql and on DuckDB over the same files; the full
results must agree.

A query file holds one feature's queries, each introduced by a ``-- name: <name>`` line;
further ``--`` lines are notes and are not sent to the engines. DuckDB is the oracle, so
each query is written to be valid and deterministic there: a query with ORDER BY orders by
a unique key set and is compared row by row, any other is compared as a multiset.

Where flowsql follows Flink and DuckDB does not (a fraction cast to an integer truncates
in Flink and rounds in DuckDB), the query states the oracle's spelling of Flink's meaning
explicitly on ``-- duckdb: <sql>`` lines (joined, in order); DuckDB then runs that text
instead and the full results must still agree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness.differential_engines import Engines

QUERY_DIR = Path(__file__).resolve().parent / "queries"
_NAME = re.compile(r"--\s*name:\s*(\S+)\s*$")
_ORACLE = re.compile(r"--\s*duckdb:\s?(.*)$")
#: (feature, name) -> the SQL DuckDB runs in place of the query text.
ORACLE_SQL: dict[tuple[str, str], str] = {}


def parse_query_file(path: Path) -> list[tuple[str, str]]:
    """(name, sql) pairs of one query file, in file order; duplicate names are an error.
    ``-- duckdb:`` lines are collected into ``ORACLE_SQL``."""
    queries: list[tuple[str, list[str]]] = []
    oracle: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _NAME.match(line.strip())
        override = _ORACLE.match(line.strip())
        if match:
            queries.append((match.group(1), []))
        elif override and queries:
            oracle.setdefault(queries[-1][0], []).append(override.group(1))
        elif line.strip().startswith("--") or not line.strip():
            continue
        elif not queries:
            raise ValueError(f"{path.name}: SQL before the first '-- name:' line")
        else:
            queries[-1][1].append(line)
    names = [name for name, _ in queries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{path.name}: duplicate query names {duplicates}")
    for name, lines in oracle.items():
        ORACLE_SQL[(path.stem, name)] = "\n".join(lines).strip().rstrip(";").strip()
    return [(name, "\n".join(body).strip().rstrip(";").strip()) for name, body in queries]


def all_queries() -> list[tuple[str, str, str]]:
    """(feature, name, sql) for every query of every file, sorted by file name."""
    return [(path.stem, name, sql)
            for path in sorted(QUERY_DIR.glob("*.sql"))
            for name, sql in parse_query_file(path)]


QUERIES = all_queries()


def test_suite_size() -> None:
    assert len(QUERIES) >= 170, f"only {len(QUERIES)} differential queries"
    assert all(sql for _, _, sql in QUERIES), "a query file has an empty query"


@pytest.mark.parametrize(("feature", "name", "sql"),
                         [pytest.param(f, n, q, id=f"{f}/{n}") for f, n, q in QUERIES])
def test_query_matches_duckdb(engines: Engines, feature: str, name: str, sql: str) -> None:
    from flowsql.tpch.verify import compare_tables, is_ordered_query

    unregistered = {t: e for t, e in engines.broken.items() if re.search(rf"\b{t}\b", sql)}
    assert not unregistered, f"flowsql could not register {unregistered}\n{sql}"
    expected = engines.duckdb.sql(ORACLE_SQL.get((feature, name), sql)).to_arrow_table()
    try:
        actual = engines.flowsql.sql(sql).to_arrow()
    except Exception as error:
        raise AssertionError(f"flowsql failed on {feature}/{name}:\n{sql}") from error
    differences = compare_tables(actual, expected, ordered=is_ordered_query(sql))
    assert differences == [], (f"{feature}/{name} differs from DuckDB:\n{sql}\n\n"
                               + "\n".join(differences[:20]))
