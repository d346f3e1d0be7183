"""JSON_VALUE, JSON_QUERY and JSON_EXISTS with a JSON path (``$``, ``.key``, ``['key']``,
``[index]``), in Flink's default modes: lax paths, NULL ON EMPTY and NULL ON ERROR.

JSON_VALUE returns a scalar as text (a number as written by JSON, a boolean as
true/false) and NULL for an object, an array, JSON null, a missing path or text that is not
JSON; JSON_QUERY returns the object or array found as JSON text (WITHOUT WRAPPER) and NULL
for a scalar; JSON_EXISTS is whether the path finds a value other than JSON null (false for text that is
not JSON). pyarrow has no JSON kernels: each distinct document of a batch is parsed once in
Python, a loop over distinct values.
"""

from __future__ import annotations

import decimal
import json
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array, per_distinct

_STEP = re.compile(r"\.([A-Za-z_$][\w$]*)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[(\d+)\]")
_MISSING = object()


@lru_cache(maxsize=256)
def parse_path(path: str) -> tuple[str | int, ...]:
    """The steps of a JSON path; an unsupported path is an error naming it."""
    text = path.strip()
    if text.lower().startswith("lax "):
        text = text[4:].strip()
    if not text.startswith("$"):
        raise ExecutionError(f"JSON path '{path}' must start with '$'")
    steps: list[str | int] = []
    position = 1
    while position < len(text):
        match = _STEP.match(text, position)
        if match is None:
            raise ExecutionError(f"unsupported JSON path '{path}'")
        key = match.group(1) or match.group(2) or match.group(3)
        steps.append(int(match.group(4)) if match.group(4) is not None else str(key))
        position = match.end()
    return tuple(steps)


def _find(document: str, steps: tuple[str | int, ...]) -> Any:
    try:
        # Numbers stay exact so that JSON_VALUE returns them as written ('1.50').
        node = json.loads(document, parse_float=decimal.Decimal)
    except ValueError:
        return _MISSING
    for step in steps:
        in_array = isinstance(step, int) and isinstance(node, list) and step < len(node)
        in_object = isinstance(step, str) and isinstance(node, dict) and step in node
        if not (in_array or in_object):
            return _MISSING
        node = node[step]
    return node


def _value_text(found: Any) -> str | None:
    if found is _MISSING or found is None or isinstance(found, dict | list):
        return None
    if isinstance(found, bool):
        return "true" if found else "false"
    return found if isinstance(found, str) else str(found)


def _query_text(found: Any) -> str | None:
    if isinstance(found, dict | list):
        return json.dumps(found, separators=(",", ":"), ensure_ascii=False,
                          default=float)
    return None


def _per_document(values: pa.Array, path: str, fn: Callable[[Any], Any],
                  out_type: pa.DataType) -> pa.Array:
    steps = parse_path(path)
    distinct = pc.unique(values)
    results = pa.array([None if v is None else fn(_find(v, steps))
                        for v in distinct.to_pylist()], out_type)
    return pc.take(results, pc.index_in(values, value_set=distinct))


def _json_function(name: str, fn: Callable[[Any], Any], out_type: pa.DataType) -> None:
    @register(name)
    def build(call: Call, args: list[Node]) -> Run:
        document, path = args

        def run(batch: pa.RecordBatch) -> Datum:
            n = batch.num_rows
            return per_distinct(as_array(document.run(batch), n), path.run(batch), n,
                                lambda v, p: _per_document(v, str(p), fn, out_type), out_type)
        return run


_json_function("json_value", _value_text, pa.string())
_json_function("json_query", _query_text, pa.string())
# A path that finds JSON null does not exist (Flink).
_json_function("json_exists", lambda found: found is not _MISSING and found is not None,
               pa.bool_())
