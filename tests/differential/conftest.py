"""Fixtures of the differential suite.

The engines are opened separately from the shared ``tpch_session`` fixture, which must stay
read-only, and once per test session (per worker under pytest-xdist).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.differential_engines import Engines, open_engines


@pytest.fixture(scope="session", params=["local", "spark"])
def engines(request: pytest.FixtureRequest, tpch_dir: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Engines:
    """The suite runs twice: on the local engine and compiled to PySpark."""
    return open_engines(tpch_dir, tmp_path_factory.mktemp("differential"), request.param)
