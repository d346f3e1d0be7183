"""The single-process executor: wiring, settings, early stop and error reporting."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pytest

from flowsql.errors import DataError, ExecutionError, FlowSQLError, ResourceExhausted
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Literal, SortKey
from flowsql.planner.physical import (
    FilterExec,
    LimitExec,
    PhysicalPlan,
    ProjectExec,
    SortExec,
    ValuesExec,
)
from flowsql.planner.schema import Field, Schema
from flowsql.runtime import registry
from flowsql.runtime.executor import execute, execute_batches
from flowsql.runtime.operator import Operator
from flowsql.runtime.operators.contract import Source


def _values(n: int) -> ValuesExec:
    fields = (Field.fresh("n", T.INT64), Field.fresh("t", T.STRING))
    rows = tuple((Literal(i if i % 4 else None, T.INT64), Literal(f"r{i % 3}", T.STRING))
                 for i in range(n))
    return ValuesExec(fields, rows, float(n))


def test_pipeline_result_is_named_and_typed_by_the_plan_schema() -> None:
    values = _values(10)
    n, t = (f.ref() for f in values.fields)
    filtered = FilterExec(values, Call("gt", (n, Literal(2, T.INT64)), T.BOOL), 1.0)
    fields = (Field.fresh("x", T.INT64), Field.fresh("x", T.STRING))
    doubled = Call("multiply", (n, Literal(2, T.INT64)), T.INT64)
    project = ProjectExec(filtered, (doubled, t), fields, 1.0)
    plan = LimitExec(SortExec(project, (SortKey(fields[0].ref(), ascending=False),), 1.0),
                     3, 1, 1.0)
    out = execute(plan, {"execution.batch-size": "2", "execution.memory-budget": "64mb"})
    assert out.column_names == ["x", "x"]
    assert out.schema.types == [T.INT64, T.STRING]
    assert out.columns[0].to_pylist() == [14, 12, 10]
    assert out.columns[1].to_pylist() == ["r1", "r0", "r2"]


def test_batches_respect_batch_size() -> None:
    sizes = [b.num_rows for b in execute_batches(_values(7), {"execution.batch-size": "3"})]
    assert sizes == [3, 3, 1]


def test_result_without_columns_keeps_rows() -> None:
    plan = ValuesExec((), ((), ()), 2.0)
    out = execute(plan, {})
    assert (out.num_rows, out.num_columns) == (2, 0)


def test_memory_budget_is_enforced() -> None:
    values = _values(200)
    plan = SortExec(values, (SortKey(values.fields[0].ref()),), 1.0)
    with pytest.raises(ResourceExhausted, match="execution.memory-budget"):
        execute(plan, {"execution.memory-budget": "1kb", "execution.batch-size": "50"})


def test_invalid_settings_are_reported() -> None:
    with pytest.raises(FlowSQLError, match="batch-size"):
        execute(_values(1), {"execution.batch-size": "lots"})
    with pytest.raises(FlowSQLError, match="memory-budget"):
        execute(_values(1), {"execution.memory-budget": "much"})


# -- nodes with scripted operators, registered for the duration of a test -----------------

@dataclass(frozen=True, eq=False)
class _Counting(PhysicalPlan):
    fields: Schema
    batches: int
    est_rows: float = 1.0

    @property
    def schema(self) -> Schema:
        return self.fields


class _CountingSource(Source):
    produced = 0
    closed = False

    def __init__(self, node: _Counting) -> None:
        self.node = node

    def produce(self) -> Iterator[pa.RecordBatch]:
        for i in range(self.node.batches):
            type(self).produced += 1
            yield pa.record_batch([pa.array([i], pa.int64())], names=["n"])

    def close(self) -> None:
        type(self).closed = True


@dataclass(frozen=True, eq=False)
class _Broken(PhysicalPlan):
    input: PhysicalPlan
    est_rows: float = 1.0

    @property
    def schema(self) -> Schema:
        return self.input.schema

    @property
    def inputs(self) -> tuple[PhysicalPlan, ...]:
        return (self.input,)


class _BrokenOperator(Operator):
    def __init__(self, node: _Broken) -> None:
        self.node = node

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        raise ZeroDivisionError("boom")


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.OPERATORS, _Counting, _CountingSource)
    monkeypatch.setitem(registry.OPERATORS, _Broken, _BrokenOperator)
    _CountingSource.produced = 0
    _CountingSource.closed = False


@pytest.mark.usefixtures("scripted")
def test_limit_stops_pulling_and_closes_upstream() -> None:
    source = _Counting((Field.fresh("n", T.INT64),), 1000)
    out = execute(LimitExec(source, 2, 1, 1.0), {})
    assert out.column(0).to_pylist() == [1, 2]
    assert _CountingSource.produced == 3
    assert _CountingSource.closed


@pytest.mark.usefixtures("scripted")
def test_unexpected_errors_name_the_operator() -> None:
    source = _Counting((Field.fresh("n", T.INT64),), 2)
    with pytest.raises(ExecutionError, match=r"_Broken.*ZeroDivisionError: boom"):
        execute(_Broken(source), {})
    assert _CountingSource.closed


class _DataFailure(Operator):
    def __init__(self, node: _Broken) -> None:
        self.node = node

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        raise DataError("bad.parquet: corrupt page at offset 12")


def test_flowsql_errors_pass_through_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.OPERATORS, _Counting, _CountingSource)
    monkeypatch.setitem(registry.OPERATORS, _Broken, _DataFailure)
    source = _Counting((Field.fresh("n", T.INT64),), 2)
    with pytest.raises(DataError) as caught:
        execute(_Broken(source), {})
    assert str(caught.value) == "bad.parquet: corrupt page at offset 12"


def test_unknown_node_type_is_an_execution_error() -> None:
    with pytest.raises(ExecutionError, match="no operator implements _Counting"):
        execute(_Counting((), 1), {})
