"""Statement sets: several INSERTs as one job that reads the table they share once, in
batch and streaming mode, from SQL (both forms) and from the Python API."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

import flowsql
from flowsql.errors import FlowSQLError
from flowsql.planner.physical import TableScanExec
from flowsql.runtime import registry

ROWS = [(i, f"k{i % 3}", i * 10) for i in range(1, 13)]


@pytest.fixture()
def scan_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many scan operators each table got: every read of a table creates one."""
    reads: dict[str, int] = {}
    factory = registry.OPERATORS[TableScanExec]

    def counted(node: TableScanExec):  # type: ignore[no-untyped-def]
        reads[node.table.name] = reads.get(node.table.name, 0) + 1
        return factory(node)

    monkeypatch.setitem(registry.OPERATORS, TableScanExec, counted)
    return reads


def make_session(tmp_path: Path, mode: str) -> flowsql.Session:
    source = tmp_path / "source.csv"
    with source.open("w", newline="") as f:
        csv.writer(f).writerows(ROWS)
    s = flowsql.connect(**{"execution.runtime-mode": mode})
    s.sql(f"""CREATE TABLE src (id BIGINT, k STRING, v BIGINT) WITH (
                'connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv')""")
    for name in ("big", "evens"):
        (tmp_path / name).mkdir()
        s.sql(f"""CREATE TABLE {name} (id BIGINT, v BIGINT) WITH (
                    'connector' = 'filesystem', 'path' = '{tmp_path / name}',
                    'format' = 'csv')""")
    return s


@pytest.fixture(params=["batch", "streaming"])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[flowsql.Session]:
    s = make_session(tmp_path, request.param)
    yield s
    s.close()


def written(session: flowsql.Session, table: str) -> list[tuple[int, int]]:
    rows = session.sql(f"SELECT id, v FROM {table}").to_arrow().to_pylist()
    return sorted((r["id"], r["v"]) for r in rows)


BIG = sorted((i, v) for i, _, v in ROWS if v > 50)
EVENS = sorted((i, v * 2) for i, _, v in ROWS if i % 2 == 0)

SCRIPTS = {
    "execute": """EXECUTE STATEMENT SET BEGIN
                    INSERT INTO big SELECT id, v FROM src WHERE v > 50;
                    INSERT INTO evens SELECT id, v * 2 FROM src WHERE id % 2 = 0;
                  END;""",
    "begin": """BEGIN STATEMENT SET;
                INSERT INTO big SELECT id, v FROM src WHERE v > 50;
                INSERT INTO evens SELECT id, v * 2 FROM src WHERE id % 2 = 0;
                END;""",
}


@pytest.mark.parametrize("form", sorted(SCRIPTS))
def test_statement_set_writes_both_sinks_from_one_read(
        session: flowsql.Session, scan_reads: dict[str, int], form: str) -> None:
    [result] = list(session.run_script(SCRIPTS[form]))
    assert result.kind == "job"
    assert result.message == (f"Job {result.job.id} submitted: "
                              "STATEMENT SET (INSERT INTO big, evens)")
    assert result.job.wait(60) == "FINISHED"
    assert scan_reads == {"src": 1}
    assert written(session, "big") == BIG
    assert written(session, "evens") == EVENS


def test_python_api_statement_set(session: flowsql.Session,
                                  scan_reads: dict[str, int]) -> None:
    statements = session.statement_set()
    statements.add_insert_sql("INSERT INTO big SELECT id, v FROM src WHERE v > 50")
    statements.add_insert_sql("INSERT INTO evens SELECT id, v * 2 FROM src WHERE id % 2 = 0")
    job = statements.execute().job
    assert job.wait(60) == "FINISHED"
    assert scan_reads == {"src": 1}
    assert written(session, "big") == BIG
    assert written(session, "evens") == EVENS


def test_separate_inserts_read_the_source_twice(session: flowsql.Session,
                                                scan_reads: dict[str, int]) -> None:
    """The baseline the statement set improves on."""
    session.sql("INSERT INTO big SELECT id, v FROM src WHERE v > 50").job.wait(60)
    session.sql("INSERT INTO evens SELECT id, v * 2 FROM src WHERE id % 2 = 0").job.wait(60)
    assert scan_reads == {"src": 2}


def test_streaming_aggregate_and_projection_share_the_read(
        tmp_path: Path, scan_reads: dict[str, int]) -> None:
    """Different columns of one table (k for one INSERT, id and v for the other)."""
    s = make_session(tmp_path, "streaming")
    s.sql("CREATE TABLE counts (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) "
          "WITH ('connector' = 'blackhole')")
    job = s.run_script("""EXECUTE STATEMENT SET BEGIN
        INSERT INTO counts SELECT k, COUNT(*) FROM src GROUP BY k;
        INSERT INTO big SELECT id, v FROM src WHERE v > 50;
        END;""")
    [result] = list(job)
    assert result.job.wait(60) == "FINISHED"
    assert scan_reads == {"src": 1}
    assert written(s, "big") == BIG
    s.close()


@pytest.mark.parametrize("script, message", [
    ("BEGIN STATEMENT SET; INSERT INTO big SELECT id, v FROM src;",
     "the statement set has no END"),
    ("BEGIN STATEMENT SET; SELECT 1; END;",
     "only INSERT INTO statements belong in a statement set"),
    ("BEGIN STATEMENT SET; END;", "the statement set has no INSERT INTO statement"),
])
def test_malformed_statement_sets(session: flowsql.Session, script: str,
                                  message: str) -> None:
    with pytest.raises(FlowSQLError, match=message):
        list(session.run_script(script))


def test_python_api_takes_only_inserts(session: flowsql.Session) -> None:
    with pytest.raises(FlowSQLError, match="takes INSERT INTO statements"):
        session.statement_set().add_insert_sql("SELECT 1")
    with pytest.raises(FlowSQLError, match="no INSERT INTO statement"):
        session.statement_set().execute()


