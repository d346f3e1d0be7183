"""kill -9 of worker processes while a checkpointed job runs: the committed output equals
the failure-free run's (see ``tests/harness/chaos.py``). A few seeds run in CI; the
``slow`` variant runs 100 seeds per query."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.chaos import (
    ROWS,
    ROWS_PER_SECOND,
    chaos_session,
    create_sources,
    insert_rows,
    upserted_rows,
)

#: append-only queries into a filesystem table: (name, sink columns, SELECT)
APPEND_ONLY = {
    "tumble": ("ws TIMESTAMP(3), we TIMESTAMP(3), k INT, c BIGINT, s BIGINT",
               "SELECT window_start, window_end, k, COUNT(*), SUM(v) FROM TABLE(TUMBLE("
               "TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) "
               "GROUP BY window_start, window_end, k"),
    "hop": ("ws TIMESTAMP(3), we TIMESTAMP(3), k INT, c BIGINT, s BIGINT",
            "SELECT window_start, window_end, k, COUNT(*), SUM(v) FROM TABLE(HOP("
            "TABLE src, DESCRIPTOR(ts), INTERVAL '500' MILLISECOND, INTERVAL '1' SECOND)) "
            "GROUP BY window_start, window_end, k"),
    "interval_join": ("v BIGINT, w BIGINT",
                      "SELECT a.v, b.v FROM src a JOIN src2 b ON a.v = b.v + 7 AND "
                      "b.ts BETWEEN a.ts - INTERVAL '1' SECOND AND a.ts"),
    "filter_project": ("v BIGINT, k INT", "SELECT v, k FROM src WHERE v % 3 <> 0"),
}

#: updating queries streamed to the client: (name, key width, SELECT)
UPDATING = {
    "group_by": (1, "SELECT k, COUNT(*) AS c, SUM(v) AS s FROM src GROUP BY k"),
    "top_n": (2, "SELECT k, rn, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k "
                 "ORDER BY v DESC) AS rn FROM src) WHERE rn <= 3"),
}

#: seconds the sources need at their throttle; kills land inside the run
DURATION_S = ROWS / ROWS_PER_SECOND


def kill_times(seed: int) -> list[float]:
    chooser = random.Random(seed)
    return sorted(chooser.uniform(0.3, DURATION_S * 0.8) for _ in range(1 + seed % 2))


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    session = chaos_session(tmp_path_factory.mktemp("checkpoints"))
    create_sources(session)
    yield session
    session.close()


def _sink(session: Any, tmp_path: Path, name: str, columns: str) -> Path:
    out = tmp_path / name
    session.sql(f"CREATE TABLE {name} ({columns}) WITH ('connector' = 'filesystem', "
                f"'path' = '{out}', 'format' = 'parquet')")
    return out


_baselines: dict[str, Any] = {}


def _append_only_baseline(session: Any, tmp_path: Path, query: str) -> Any:
    if query not in _baselines:
        columns, select = APPEND_ONLY[query]
        out = _sink(session, tmp_path, f"{query}_baseline", columns)
        _baselines[query], _ = insert_rows(session, f"INSERT INTO {query}_baseline {select}",
                                           out)
    return _baselines[query]


def _check_append_only(session: Any, tmp_path: Path, query: str, seed: int) -> None:
    expected = _append_only_baseline(session, tmp_path, query)
    assert expected, "the failure-free run wrote nothing"
    columns, select = APPEND_ONLY[query]
    name = f"{query}_{seed}"
    out = _sink(session, tmp_path, name, columns)
    rows, job = insert_rows(session, f"INSERT INTO {name} {select}", out, kill_times(seed),
                            seed)
    assert job.info().restarts >= 1  # the kills were recovered from
    missing, extra = expected - rows, rows - expected
    assert not missing and not extra, (f"{sum(missing.values())} rows missing, "
                                       f"{sum(extra.values())} extra")


def _check_updating(session: Any, query: str, seed: int) -> None:
    width, select = UPDATING[query]
    key = f"updating-{query}"
    if key not in _baselines:
        _baselines[key] = upserted_rows(session, select, width)
    expected = _baselines[key]
    assert expected
    assert upserted_rows(session, select, width, kill_times(seed), seed) == expected


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("query", sorted(APPEND_ONLY))
def test_append_only_output_is_exactly_the_failure_free_output(
        session: Any, tmp_path: Path, query: str, seed: int) -> None:
    _check_append_only(session, tmp_path, query, seed)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("query", sorted(UPDATING))
def test_updating_result_materializes_to_the_failure_free_result(
        session: Any, query: str, seed: int) -> None:
    _check_updating(session, query, seed)


def test_at_least_once_loses_nothing(tmp_path: Path) -> None:
    session = chaos_session(tmp_path / "checkpoints", mode="at_least_once")
    try:
        create_sources(session)
        columns, select = APPEND_ONLY["filter_project"]
        out = _sink(session, tmp_path, "alo", columns)
        rows, _ = insert_rows(session, f"INSERT INTO alo {select}", out, kill_times(3), 3)
        expected = {(v, v % 23) for v in range(1, ROWS + 1) if v % 3 != 0}
        assert set(rows) == expected  # nothing missing, nothing invented
    finally:
        session.close()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 200))
@pytest.mark.parametrize("query", sorted(APPEND_ONLY))
def test_many_seeds_append_only(session: Any, tmp_path: Path, query: str, seed: int) -> None:
    _check_append_only(session, tmp_path, query, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 200))
@pytest.mark.parametrize("query", sorted(UPDATING))
def test_many_seeds_updating(session: Any, query: str, seed: int) -> None:
    _check_updating(session, query, seed)
