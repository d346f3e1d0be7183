"""``JOIN t FOR SYSTEM_TIME AS OF l.pt``: a processing-time lookup into a bounded table gives
the rows of the plain join (the table never changes while the query runs), in batch and
streaming mode; every other temporal join is refused at line:col rather than read as a
plain join."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import BindError


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lookup")
    pq.write_table(pa.table({"k": pa.array([1, 2, 3, 2, 9], pa.int64()),
                             "v": pa.array([10, 20, 30, 40, 50], pa.int64())}),
                   root / "facts.parquet")
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64()),
                             "name": ["one", "two", "three"]}), root / "dim.parquet")
    return {"facts": root / "facts.parquet", "dim": root / "dim.parquet"}


def session(files: dict[str, Path], mode: str, parallelism: int = 1) -> flowsql.Session:
    s = flowsql.connect(**{"execution.runtime-mode": mode,
                           "parallelism.default": str(parallelism)})
    s.sql(f"""CREATE TABLE facts (k BIGINT, v BIGINT, pt AS PROCTIME())
              WITH ('connector' = 'filesystem', 'path' = '{files['facts']}')""")
    s.sql(f"""CREATE TABLE dim (k BIGINT, name STRING)
              WITH ('connector' = 'filesystem', 'path' = '{files['dim']}')""")
    s.sql("""CREATE TABLE endless (k BIGINT, name STRING)
             WITH ('connector' = 'datagen', 'rows-per-second' = '10')""")
    return s


def rows(s: flowsql.Session, sql: str) -> list[tuple]:
    return sorted((tuple(r.values()) for r in s.sql(sql).to_arrow().to_pylist()), key=repr)


LOOKUPS = [
    ("""SELECT f.k, f.v, d.name FROM facts AS f
        JOIN dim FOR SYSTEM_TIME AS OF f.pt AS d ON f.k = d.k""",
     [(1, 10, "one"), (2, 20, "two"), (2, 40, "two"), (3, 30, "three")]),
    ("""SELECT f.k, f.v, d.name FROM (SELECT k, v, PROCTIME() AS p FROM facts) AS f
        LEFT JOIN dim FOR SYSTEM_TIME AS OF f.p AS d ON f.k = d.k""",
     [(1, 10, "one"), (2, 20, "two"), (2, 40, "two"), (3, 30, "three"), (9, 50, None)]),
]


@pytest.mark.parametrize(("mode", "parallelism"), [("batch", 1), ("streaming", 1),
                                                   ("streaming", 2)])
@pytest.mark.parametrize(("sql", "expected"), LOOKUPS)
def test_lookup_into_a_bounded_table(files: dict[str, Path], mode: str, parallelism: int,
                                     sql: str, expected: list[tuple]) -> None:
    assert rows(session(files, mode, parallelism), sql) == sorted(expected, key=repr)


ERRORS = [
    ("SELECT * FROM facts AS f\nJOIN dim FOR SYSTEM_TIME AS OF f.v AS d ON f.k = d.k",
     "only a processing-time attribute of the left input", (2, 32)),
    ("SELECT * FROM facts AS f\nJOIN endless FOR SYSTEM_TIME AS OF f.pt AS e ON f.k = e.k",
     "table 'endless' is unbounded", (2, 36)),
    ("SELECT * FROM facts AS f\nRIGHT JOIN dim FOR SYSTEM_TIME AS OF f.pt AS d ON f.k = d.k",
     "a lookup join is INNER or LEFT, not RIGHT", (2, 38)),
    ("SELECT * FROM dim FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00'",
     "FOR SYSTEM_TIME AS OF belongs to the right side of a JOIN", (1, 15)),
]


@pytest.mark.parametrize(("sql", "message", "pos"), ERRORS)
def test_other_temporal_joins_are_refused(files: dict[str, Path], sql: str, message: str,
                                          pos: tuple[int, int]) -> None:
    with pytest.raises(BindError) as info:
        session(files, "streaming").sql(sql)
    assert message in str(info.value)
    assert (info.value.line, info.value.col) == pos
