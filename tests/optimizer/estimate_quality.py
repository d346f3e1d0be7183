"""Estimated against actual rows for the joins and aggregates of the 22 TPC-H plans.

Statistics stand in for ``ANALYZE TABLE``: the filesystem connector's own figures (row count
from the Parquet footers, distinct bounds from their min/max) plus, per column, exact
figures DuckDB computes over the same files -- null count, ``count(DISTINCT ...)``, min/max
and an equi-depth histogram (quantile bounds) for ordered types, all in the numeric form of
``statistic_number``. With ``analyzed=False`` only the connector's footer figures are used.

Actual rows come from DuckDB: every join and aggregate node of the optimized logical plan is
spelled as SQL (``plan_sql``) and counted. The q-error of a node is
``max(est, act) / min(est, act)`` with both taken as at least one row, so it is symmetric
and never below 1.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot

from flowsql.optimizer import optimize
from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.planner import types as T
from flowsql.planner.catalog import Catalog, ColumnStatistics, TableEntry, TableStatistics
from flowsql.planner.logical import Aggregate, Join, LogicalPlan, walk_plan
from flowsql.planner.statistics import ANALYZED, is_ordered_type, statistic_number
from flowsql.runtime.connectors.filesystem import table_statistics
from flowsql.sql.bind_query import QueryBinder
from flowsql.sql.dialect import DIALECT

from .plan_sql import to_sql

QUERIES = Path(__file__).resolve().parents[2] / "flowsql" / "tpch" / "queries"
TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
HISTOGRAM_BUCKETS = 32


def oracle(data_dir: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one view per TPC-H table over the Parquet files."""
    con = duckdb.connect()
    for name in TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM "
                    f"read_parquet('{data_dir / (name + '.parquet')}')")
    return con


def catalog(data_dir: Path, con: duckdb.DuckDBPyConnection, analyzed: bool = True) -> Catalog:
    """The eight tables with footer statistics, and (``analyzed``) exact column figures."""
    out = Catalog()
    for name in TABLES:
        path = str(data_dir / f"{name}.parquet")
        schema = pa.schema([pa.field(f.name, T.normalize_storage_type(f.type), f.nullable)
                            for f in pq.ParquetFile(path).schema_arrow])
        options = {"path": path, "format": "parquet"}
        stats = table_statistics(options)
        if analyzed:
            columns = {f.name: column_statistics(con, name, f) for f in schema}
            stats = TableStatistics(stats.row_count, stats.total_bytes, stats.distinct_bounds,
                                    columns, ANALYZED)
        out.add(TableEntry(name, schema, {"path": path}, stats))
    return out


def column_statistics(con: duckdb.DuckDBPyConnection, table: str,
                      field: pa.Field) -> ColumnStatistics:
    """Exact figures of one column; min/max and histogram only for ordered types."""
    c = f'"{field.name}"'
    nulls, distinct = con.execute(
        f"SELECT count(*) - count({c}), count(DISTINCT {c}) FROM {table}").fetchone()
    if not is_ordered_type(field.type):
        width = con.execute(f"SELECT avg(strlen(CAST({c} AS VARCHAR))) FROM {table}").fetchone()
        return ColumnStatistics(nulls, distinct, avg_width=width[0])
    points = ", ".join(str(i / HISTOGRAM_BUCKETS) for i in range(HISTOGRAM_BUCKETS + 1))
    bounds = con.execute(f"SELECT quantile_disc({c}, [{points}]) FROM {table}").fetchone()[0]
    numbers = tuple(statistic_number(v, field.type) for v in bounds or ())
    histogram = tuple(float(n) for n in numbers if n is not None)
    low, high = (histogram[0], histogram[-1]) if histogram else (None, None)
    return ColumnStatistics(nulls, distinct, low, high, histogram)


def bind(cat: Catalog, number: int) -> LogicalPlan:
    sql = (QUERIES / f"q{number:02d}.sql").read_text()
    return QueryBinder(cat, sql).bind(sqlglot.parse_one(sql, read=DIALECT))


@dataclass(frozen=True)
class NodeEstimate:
    """One join or aggregate of a plan: what the estimator said and what DuckDB counted."""

    query: int
    kind: str  # "join" or "aggregate"
    label: str
    estimated: float
    actual: int

    @property
    def q_error(self) -> float:
        return q_error(self.estimated, self.actual)


def q_error(estimated: float, actual: float) -> float:
    e, a = max(estimated, 1.0), max(float(actual), 1.0)
    return max(e, a) / min(e, a)


def _label(node: LogicalPlan) -> str:
    if isinstance(node, Join):
        return f"{node.kind} join"
    assert isinstance(node, Aggregate)
    keys = ", ".join(f.name for f in node.group_fields)
    return f"aggregate [{keys}]"


def query_estimates(cat: Catalog, con: duckdb.DuckDBPyConnection,
                    number: int) -> list[NodeEstimate]:
    """Every join and aggregate of query ``number``'s optimized plan, pre-order."""
    plan = optimize(bind(cat, number)).plan
    estimator = CardinalityEstimator()
    out = []
    for node in walk_plan(plan):
        if not isinstance(node, Join | Aggregate):
            continue
        actual = con.execute(f"SELECT count(*) FROM ({to_sql(node)})").fetchone()[0]
        kind = "join" if isinstance(node, Join) else "aggregate"
        out.append(NodeEstimate(number, kind, _label(node), estimator.rows(node), actual))
    return out


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 1.0
