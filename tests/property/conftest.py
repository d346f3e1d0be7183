"""Fixtures of the property tests: random Parquet tables and the three runs over them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.property.random_tables import write_tables
from tests.property.three_runs import ThreeRuns

#: the data of the fast (CI) cases; the slow sweep adds others
CI_DATA_SEED = 17
SWEEP_DATA_SEEDS = (1, 2)


@pytest.fixture(scope="session")
def ci_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_tables(CI_DATA_SEED, tmp_path_factory.mktemp(f"tables-{CI_DATA_SEED}"))


@pytest.fixture(scope="session")
def three_runs(ci_tables: dict[str, Path],
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreeRuns]:
    runs = ThreeRuns(ci_tables, tmp_path_factory.mktemp("spill-p1"), parallelism=1)
    yield runs
    runs.close()


@pytest.fixture(scope="session")
def three_runs_parallel(ci_tables: dict[str, Path],
                        tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreeRuns]:
    runs = ThreeRuns(ci_tables, tmp_path_factory.mktemp("spill-p2"), parallelism=2)
    yield runs
    runs.close()


@pytest.fixture(scope="session", params=SWEEP_DATA_SEEDS, ids=lambda s: f"data{s}")
def sweep_runs(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreeRuns]:
    seed = request.param
    tables = write_tables(seed, tmp_path_factory.mktemp(f"tables-{seed}"))
    runs = ThreeRuns(tables, tmp_path_factory.mktemp(f"spill-sweep-{seed}"), parallelism=1)
    yield runs
    runs.close()
