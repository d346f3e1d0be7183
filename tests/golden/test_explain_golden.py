"""Golden EXPLAIN files: the plans of representative queries and of all 22 TPC-H queries.

Each case file starts with a ``-- why:`` line saying why it exists. Regenerate the expected
files with ``make golden`` (FLOWSQL_UPDATE_GOLDEN=1) and review the diff like code.

The goldens show plan *shape* only (``EXPLAIN (COSTS OFF)``: no estimated rows), so a change
of the estimator does not rewrite them all; estimates are checked against actual rows by
q-error bounds in ``test_estimate_bounds``. One case (``WITH_ESTIMATES``) keeps the estimates,
as the golden of how EXPLAIN prints them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowsql.tpch.queries import QUERY_NUMBERS, load_query

HERE = Path(__file__).parent
CASES = sorted((HERE / "cases").glob("*.sql"))
#: streaming plans: the case file's statements before the last create its tables
STREAMING_CASES = sorted((HERE / "streaming_cases").glob("*.sql"))
UPDATE = os.environ.get("FLOWSQL_UPDATE_GOLDEN") == "1"
#: the one case whose golden shows estimated rows (``rows=~N``)
WITH_ESTIMATES = "filter_pushdown_into_scan"
SHAPE = "EXPLAIN (COSTS OFF) "


def _check(name: str, text: str) -> None:
    expected_file = HERE / "expected" / f"{name}.txt"
    if UPDATE:
        expected_file.write_text(text)
        return
    assert expected_file.exists(), f"missing golden file {expected_file.name}; run make golden"
    assert text == expected_file.read_text()


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_explain_case(case: Path, tpch_session) -> None:  # type: ignore[no-untyped-def]
    sql = case.read_text()
    assert sql.startswith("-- why:"), "each golden case says why it exists"
    explain = "EXPLAIN " if case.stem == WITH_ESTIMATES else SHAPE
    text = tpch_session.sql(explain + sql.split("\n", 1)[1]).plan_text
    _check(case.stem, text + "\n")


@pytest.mark.parametrize("number", QUERY_NUMBERS)
def test_explain_tpch(number: int, tpch_session) -> None:  # type: ignore[no-untyped-def]
    text = tpch_session.sql(SHAPE + load_query(number)).plan_text
    _check(f"tpch_q{number:02d}", text + "\n")


@pytest.mark.parametrize("case", STREAMING_CASES, ids=[c.stem for c in STREAMING_CASES])
def test_explain_streaming_case(case: Path) -> None:
    import flowsql

    sql = case.read_text()
    assert sql.startswith("-- why:"), "each golden case says why it exists"
    *tables, query = [s for s in sql.split("\n", 1)[1].split(";") if s.strip()]
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    for statement in tables:
        session.sql(statement)
    _check(case.stem, session.sql(SHAPE + query).plan_text + "\n")
