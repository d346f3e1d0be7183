"""Physical plans <-> JSON, so a worker can rebuild a stage's operators. Never Python object serialization.

Plan nodes, expressions, fields and catalog entries are frozen dataclasses; each encodes as
an object naming its class (``"@": "HashJoinExec"``) with one entry per dataclass field, and
decodes by calling the class with those entries. Only the classes listed in ``_CLASSES`` can
be named, so a description can build plan values and nothing else. Tuples become JSON
arrays (the plan vocabulary has no lists), dicts ``{"@dict": ...}``, Arrow types their text
name (``type_names``), Arrow schemas a list of fields, and literal values one-row Arrow IPC
streams in base64 so every value of every type (decimals, dates, intervals) round-trips
exactly with its declared type.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner import expressions as E
from flowsql.planner import physical as P
from flowsql.planner import physical_streaming as S
from flowsql.planner.catalog import (
    ColumnStatistics,
    ComputedColumn,
    MetadataColumn,
    TableEntry,
    TableStatistics,
    WatermarkSpec,
)
from flowsql.planner.logical import WindowShape
from flowsql.planner.nesting import deep_nesting, too_deep_message
from flowsql.planner.physical_statement_set import StatementSetExec
from flowsql.planner.schema import Field
from flowsql.planner.udf import FunctionHints, UserFunction
from flowsql.runtime.jobgraph import StageInput
from flowsql.runtime.parallel.type_names import type_from_name, type_name

_CLASSES: dict[str, type] = {cls.__name__: cls for cls in (
    P.TableScanExec, P.SourceWatermark, P.ValuesExec, P.FilterExec, P.ProjectExec, P.HashJoinExec,
    P.NestedLoopJoinExec, P.HashAggregateExec, P.SortMergeJoinExec, P.SortAggregateExec, P.WindowExec, P.SortExec, P.TopNExec,
    P.LimitExec, P.SetOpExec, P.ExchangeExec, StageInput, P.TableFunctionExec,
    P.WindowTableFunctionExec, P.WindowAggregateExec, WindowShape,
    P.SharedSubplanExec, P.ReuseSubplanExec,
    S.WatermarkAssignerExec, S.GroupAggregateExec, S.StreamJoinExec, S.IntervalJoinExec,
    S.OverAggregateExec, S.RankExec, S.SinkExec, S.ProctimeWatermarkExec, S.WindowJoinExec,
    S.WindowedAggregateExec, S.LookupJoinExec, StatementSetExec,
    E.ColumnRef, E.Literal, E.Call, E.Cast, E.Case, E.SortKey, E.AggCall, E.FrameBound,
    E.Frame, E.WindowCall, E.UdfCall, UserFunction, FunctionHints, Field, TableEntry,
    TableStatistics, ColumnStatistics, WatermarkSpec,
    ComputedColumn, MetadataColumn)}


def dumps(value: Any) -> str:
    """JSON text of a plan (or any value built from the vocabulary above)."""
    with deep_nesting(lambda: ExecutionError(too_deep_message("send to workers"))):
        return json.dumps(encode(value), separators=(",", ":"))


def loads(text: str) -> Any:
    with deep_nesting(lambda: ExecutionError(too_deep_message("decode on a worker"))):
        return decode(json.loads(text))


def encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"@dict": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, pa.DataType):
        return {"@type": type_name(value)}
    if isinstance(value, pa.Schema):
        return {"@schema": [[f.name, type_name(f.type), f.nullable] for f in value]}
    if isinstance(value, E.Literal):
        return {"@": "Literal", "value": _value(value.value, value.dtype),
                "dtype": encode(value.dtype)}
    name = type(value).__name__
    if _CLASSES.get(name) is type(value) and dataclasses.is_dataclass(value):
        return {"@": name, **{f.name: encode(getattr(value, f.name))
                              for f in dataclasses.fields(value)}}
    return _value(value, None)


def decode(data: Any) -> Any:
    if isinstance(data, list):
        return tuple(decode(v) for v in data)
    if not isinstance(data, dict):
        return data
    if "@dict" in data:
        return {k: decode(v) for k, v in data["@dict"].items()}
    if "@type" in data:
        return type_from_name(data["@type"])
    if "@schema" in data:
        return pa.schema([pa.field(n, type_from_name(t), nullable) for n, t, nullable
                          in data["@schema"]])
    if "@value" in data:
        stream = pa.ipc.open_stream(base64.b64decode(data["@value"]))
        return stream.read_all().column(0)[0].as_py()
    cls = _CLASSES.get(data.get("@", ""))
    if cls is None:
        raise ExecutionError(f"a plan description names an unknown class {data.get('@')!r}")
    return cls(**{k: decode(v) for k, v in data.items() if k != "@"})


def _value(value: Any, dtype: pa.DataType | None) -> dict[str, str]:
    """A Python value as a one-row Arrow IPC stream (type inferred when ``dtype`` is None)."""
    try:
        array = pa.array([value], type=dtype)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise ExecutionError(f"cannot describe value {value!r} for a worker: {exc}") from exc
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, pa.schema([("v", array.type)])) as writer:
        writer.write_batch(pa.record_batch([array], names=["v"]))
    return {"@value": base64.b64encode(sink.getvalue().to_pybytes()).decode()}
