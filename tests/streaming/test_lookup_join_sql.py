"""``JOIN t FOR SYSTEM_TIME AS OF l.proctime`` in streaming mode runs as a lookup join
(``LookupJoin`` in EXPLAIN): results equal DuckDB's plain join at parallelism 1 and 2
(inner, left, a residual, NULL keys), the probe stream is not kept in state, and the
output is insert-only (a LEFT lookup join writes into an append-only sink)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import BindError, PlanError

PROBE_ROWS = 3000


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lookup")
    keys = [None if i % 17 == 0 else i % 11 for i in range(PROBE_ROWS)]
    pq.write_table(pa.table({"k": pa.array(keys, pa.int64()),
                             "v": pa.array(range(PROBE_ROWS), pa.int64())}),
                   root / "facts.parquet", row_group_size=500)
    # key 3 twice, a NULL key, keys 8..10 missing
    pq.write_table(pa.table({"k": pa.array([0, 1, 2, 3, 3, 4, 5, 6, 7, None], pa.int64()),
                             "name": ["zero", "one", "two", "three", "drei", "four", "five",
                                      "six", "seven", "none"],
                             "cap": pa.array([100, 200, 300, 400, 2500, 600, 700, 800, 900,
                                              1000], pa.int64())}),
                   root / "dim.parquet")
    return root


def session(files: Path, mode: str = "streaming", parallelism: int = 1) -> flowsql.Session:
    s = flowsql.connect(**{"execution.runtime-mode": mode,
                           "parallelism.default": str(parallelism)})
    s.sql(f"""CREATE TABLE facts (k BIGINT, v BIGINT, pt AS PROCTIME())
              WITH ('connector' = 'filesystem', 'path' = '{files / 'facts.parquet'}')""")
    s.sql(f"""CREATE TABLE dim (k BIGINT, name STRING, cap BIGINT)
              WITH ('connector' = 'filesystem', 'path' = '{files / 'dim.parquet'}')""")
    return s


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def _duckdb(files: Path, sql: str) -> list[tuple[Any, ...]]:
    duckdb = pytest.importorskip("duckdb")
    connection = duckdb.connect()
    connection.execute(f"CREATE VIEW facts AS SELECT * FROM "
                       f"read_parquet('{files / 'facts.parquet'}')")
    connection.execute(f"CREATE VIEW dim AS SELECT * FROM read_parquet('{files / 'dim.parquet'}')")
    return _rows(connection.sql(sql).to_arrow_table())


#: (lookup join, the same join for DuckDB)
CASES = {
    "inner": ("""SELECT f.k, f.v, d.name FROM facts AS f
                 JOIN dim FOR SYSTEM_TIME AS OF f.pt AS d ON f.k = d.k""",
              "SELECT f.k, f.v, d.name FROM facts AS f JOIN dim AS d ON f.k = d.k"),
    "left": ("""SELECT f.k, f.v, d.name FROM facts AS f
                LEFT JOIN dim FOR SYSTEM_TIME AS OF f.pt AS d ON f.k = d.k""",
             "SELECT f.k, f.v, d.name FROM facts AS f LEFT JOIN dim AS d ON f.k = d.k"),
    "left_residual": ("""SELECT f.k, f.v, d.name, d.cap FROM facts AS f
                         LEFT JOIN dim FOR SYSTEM_TIME AS OF f.pt AS d
                         ON f.k = d.k AND f.v < d.cap AND d.name <> 'two'
                         WHERE f.v % 2 = 0""",
                      """SELECT f.k, f.v, d.name, d.cap FROM facts AS f LEFT JOIN dim AS d
                         ON f.k = d.k AND f.v < d.cap AND d.name <> 'two'
                         WHERE f.v % 2 = 0"""),
    "inner_computed_key": ("""SELECT f.v, UPPER(d.name) FROM facts AS f
                              JOIN dim FOR SYSTEM_TIME AS OF f.pt AS d ON f.k + 1 = d.k""",
                           """SELECT f.v, UPPER(d.name) FROM facts AS f JOIN dim AS d
                              ON f.k + 1 = d.k"""),
}


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_lookup_join_matches_duckdb(files: Path, case: str, parallelism: int) -> None:
    lookup, plain = CASES[case]
    s = session(files, parallelism=parallelism)
    plan = "\n".join(r["plan"] for r in s.sql("EXPLAIN " + lookup).to_arrow().to_pylist())
    assert "LookupJoin[" in plan and "StreamJoin" not in plan
    got = _rows(s.sql(lookup).to_arrow())
    assert got and got == _duckdb(files, plain)


def test_the_probe_stream_is_not_kept_in_state(files: Path) -> None:
    result = session(files).sql(CASES["inner"][0])
    assert result.to_arrow().num_rows > 0
    metrics = {m["operator"].split(" ")[0]: m for m in result.changelog.run.metrics()}
    lookup = metrics["LookupJoinExec"]
    assert lookup["records_in"] == PROBE_ROWS
    # the state is the dim table's 10 rows, not the 3000 probe rows a regular join keeps
    assert lookup["state_rows"] == 10 and lookup["state_bytes"] > 0


def test_a_left_lookup_join_is_insert_only(files: Path, tmp_path: Path) -> None:
    s = session(files)
    s.sql(f"""CREATE TABLE out (k BIGINT, v BIGINT, name STRING) WITH (
              'connector' = 'filesystem', 'path' = '{tmp_path / 'out'}',
              'format' = 'parquet')""")
    assert s.sql("INSERT INTO out " + CASES["left"][0]).job.wait(60) == "FINISHED"
    written = pq.read_table(tmp_path / "out")
    assert _rows(written) == _duckdb(files, CASES["left"][1])


def test_a_lookup_join_needs_an_equality_on_the_table(files: Path) -> None:
    with pytest.raises(PlanError, match="a lookup join needs an equality"):
        session(files).sql("""SELECT f.v, d.name FROM facts AS f JOIN dim FOR SYSTEM_TIME
                              AS OF f.pt AS d ON f.v < d.cap""").to_arrow()
    with pytest.raises(BindError, match="a lookup join needs an ON or USING clause"):
        session(files).sql("""SELECT f.v, d.name FROM facts AS f
                              CROSS JOIN dim FOR SYSTEM_TIME AS OF f.pt AS d""")


def test_nexmark_q13_is_a_lookup_join_whose_state_is_the_side_input() -> None:
    from flowsql.nexmark.generator import GeneratorConfig
    from flowsql.nexmark.queries import QUERIES, SIDE_INPUT_ROWS
    from flowsql.nexmark.runner import open_session

    s = open_session(GeneratorConfig(events=5000))
    plan = "\n".join(r["plan"] for r in s.sql("EXPLAIN " + QUERIES["q13"]).to_arrow().to_pylist())
    assert "LookupJoin[inner]" in plan and "StreamJoin" not in plan
    result = s.sql(QUERIES["q13"])
    assert result.to_arrow().num_rows == 4600  # every bid finds its side input row
    lookup = next(m for m in result.changelog.run.metrics()
                  if m["operator"].startswith("LookupJoinExec"))
    assert lookup["records_in"] == 4600 and lookup["state_rows"] == SIDE_INPUT_ROWS
