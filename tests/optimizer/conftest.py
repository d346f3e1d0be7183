"""Fixtures of the optimizer tests: the catalog entries and a DuckDB oracle over them."""

from __future__ import annotations

import duckdb
import pytest

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry

from .oracle import connection
from .planbuilder import table


@pytest.fixture(scope="module")
def oracle() -> duckdb.DuckDBPyConnection:
    return connection()


@pytest.fixture
def t() -> TableEntry:
    return table("t", 6, a=T.INT64, b=T.INT64, s=T.STRING)


@pytest.fixture
def u() -> TableEntry:
    return table("u", 6, x=T.INT64, y=T.INT64, z=T.STRING)


@pytest.fixture
def v() -> TableEntry:
    return table("v", 3, k=T.INT64, w=T.INT64)
