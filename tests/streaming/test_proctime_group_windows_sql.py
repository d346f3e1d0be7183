"""Group windows over processing time, from SQL text to rows: ``GROUP BY k, TUMBLE(pt,
size)`` / ``HOP`` / ``SESSION`` where ``pt`` is the computed column ``pt AS PROCTIME()`` or
``PROCTIME()`` in a subquery's select list, at parallelism 1 and 2.

Which window a row falls in depends on when it is read, so, as in
test_proctime_windows.py, the checks are what holds whatever the timing: every row is
counted once per window it belongs to (per key, against the batch-mode count of the same
reproducible datagen table), windows have the declared size and alignment, and the
processing-time watermark drives the window aggregate.
"""

from __future__ import annotations

import datetime as dt

import pytest

import flowsql
from flowsql.errors import BindError
from flowsql.session import Session
from tests.streaming.test_proctime_windows import TABLE, per_key

# the same rows without the computed column: PROCTIME() comes from the query instead
PLAIN = TABLE.replace(", pt AS PROCTIME()", "").replace("CREATE TABLE t ", "CREATE TABLE p ")

INPUTS = {"computed column": "t",
          "PROCTIME() in a subquery": "(SELECT k, v, PROCTIME() AS pt FROM p) AS x"}


@pytest.fixture(scope="module")
def batch_counts() -> dict[int, tuple[int, int]]:
    s = flowsql.connect()
    s.sql(TABLE)
    rows = s.sql("SELECT k, COUNT(*) AS c, SUM(v) AS s FROM t GROUP BY k").to_arrow()
    return {r["k"]: (r["c"], r["s"]) for r in rows.to_pylist()}


def streaming(parallelism: int) -> Session:
    s = flowsql.connect(**{"execution.runtime-mode": "streaming",
                           "parallelism.default": str(parallelism)})
    s.sql(TABLE)
    s.sql(PLAIN)
    return s


def _ms(value: dt.datetime) -> int:
    return round(value.replace(tzinfo=dt.UTC).timestamp() * 1000)


def windows(session: Session, source: str, window: str,
            kind: str) -> list[tuple[int, int, int, int, int]]:
    """(k, start ms, end ms, count, sum) of each window of ``GROUP BY k, <window>``."""
    table = session.sql(f"""SELECT k, {kind}_START({window}) AS ws, {kind}_END({window}) AS we,
                                   COUNT(*) AS c, SUM(v) AS s
                            FROM {source} GROUP BY k, {kind}({window})""").to_arrow()
    return [(r["k"], _ms(r["ws"]), _ms(r["we"]), r["c"], r["s"]) for r in table.to_pylist()]


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("source", INPUTS.values(), ids=list(INPUTS))
def test_tumble_counts_every_row_once(source: str, parallelism: int,
                                      batch_counts: dict[int, tuple[int, int]]) -> None:
    rows = windows(streaming(parallelism), source, "pt, INTERVAL '50' MILLISECOND", "TUMBLE")
    assert per_key(rows) == batch_counts
    assert all(end - start == 50 and start % 50 == 0 for _, start, end, _, _ in rows)
    assert len(rows) == len({(k, start) for k, start, _, _, _ in rows})  # each fires once


@pytest.mark.parametrize("source", INPUTS.values(), ids=list(INPUTS))
def test_hop_counts_every_row_in_each_of_its_windows(
        source: str, batch_counts: dict[int, tuple[int, int]]) -> None:
    rows = windows(streaming(1), source,
                   "pt, INTERVAL '25' MILLISECOND, INTERVAL '50' MILLISECOND", "HOP")
    assert per_key(rows) == {k: (2 * c, 2 * s) for k, (c, s) in batch_counts.items()}
    assert all(end - start == 50 and start % 25 == 0 for _, start, end, _, _ in rows)


@pytest.mark.parametrize("source", INPUTS.values(), ids=list(INPUTS))
def test_session_per_key_holds_all_its_rows(
        source: str, batch_counts: dict[int, tuple[int, int]]) -> None:
    rows = windows(streaming(2), source, "pt, INTERVAL '1' HOUR", "SESSION")
    assert per_key(rows) == batch_counts
    assert len(rows) == len(batch_counts)


def test_the_plan_uses_the_processing_time_watermark() -> None:
    source = INPUTS["PROCTIME() in a subquery"]
    plan = streaming(1).sql(f"""EXPLAIN SELECT k, COUNT(*) AS c FROM {source}
                                GROUP BY k, TUMBLE(pt, INTERVAL '1' SECOND)""")
    text = "\n".join(str(v) for row in plan.to_arrow().to_pylist() for v in row.values())
    assert "ProctimeWatermark pt" in text
    assert "WindowAggregate tumble(size=1000ms) time=pt" in text


def test_proctime_takes_no_arguments() -> None:
    with pytest.raises(BindError, match=r"PROCTIME\(\) takes no arguments") as info:
        streaming(1).sql("SELECT k, PROCTIME(1) FROM p")
    assert info.value.line == 1
