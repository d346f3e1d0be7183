"""The ``print`` sink: one line per row on standard output, as Flink's print connector.

Flink converts each row to its external ``Row`` and prints ``Row.toString()``: the row
kind's short string, then the fields in brackets separated by ``", "``, e.g.
``+I[1, a, 2024-01-01T00:00]``. Every value is printed as the Java object Flink's converter
makes of it, so the text matches Flink's:

* NULL -> ``null``; BOOLEAN -> ``true``/``false``; strings as they are;
* DECIMAL -> ``BigDecimal.toString`` (keeps the scale, ``1.50``; scientific notation
  below 1E-6, ``1E-7``) -- Python's ``Decimal.__str__`` follows the same rule;
* DOUBLE/FLOAT -> ``Double.toString``/``Float.toString`` (``1.0``, ``1.0E7``,
  ``1.0E-4``; ``NaN``, ``Infinity``);
* DATE -> ``LocalDate`` (``2024-01-01``); TIME -> ``LocalTime`` and TIMESTAMP ->
  ``LocalDateTime`` (``2024-01-01T00:00``: seconds only when not zero, the fraction in
  groups of three digits); TIMESTAMP_LTZ -> ``Instant`` (``2024-01-01T00:00:00Z``);
* BYTES -> ``Arrays.toString`` of the signed bytes; ARRAY -> ``[a, b]``.

With ``'print-identifier'`` set, a line starts with ``<identifier>> ``; when the sink runs
with parallelism > 1 the subtask number (from 1) is added, ``<identifier>:<n>> `` (or
``<n>> `` without identifier), as Flink's ``PrintSinkOutputWriter`` does.
``'standard-error' = 'true'`` prints to standard error instead. Output is flushed after
every batch, so lines appear while a streaming job runs.

Delivery is at-least-once, as Flink's print sink: a line printed cannot be taken back, so
after a restore from a checkpoint the rows the sources replay (those after the checkpoint's
barrier) are printed again. The sink keeps no state of its own.

Formatting is one pass per column: integers, booleans, strings and dates go through Arrow
casts; the types whose Java text differs from Arrow's are formatted per value (from one
``to_pylist`` of the column), which is the cost of printing anyway. Lines are assembled
with Arrow's element-wise string join.
"""

from __future__ import annotations

import datetime
import math
import sys
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.connectors import PRINT
from flowsql.runtime.changelog import LABELS
from flowsql.runtime.connectors.sinks import TableSink
from flowsql.runtime.operator import OperatorContext

_LABELS = np.array(LABELS, dtype=object)


class PrintSink(TableSink):
    def __init__(self, table: TableEntry, context: OperatorContext) -> None:
        self.prefix = line_prefix(PRINT.value(table.options, "print-identifier"),
                                  context.subtask_index, context.parallelism)
        self.to_stderr: bool = PRINT.value(table.options, "standard-error")

    def write(self, batch: pa.RecordBatch, kinds: np.ndarray | None) -> None:
        if not batch.num_rows:
            return
        stream = sys.stderr if self.to_stderr else sys.stdout
        stream.write("\n".join(format_rows(batch, kinds, self.prefix)) + "\n")
        stream.flush()


def line_prefix(identifier: str | None, subtask_index: int, parallelism: int) -> str:
    prefix = identifier or ""
    if parallelism > 1:
        prefix = f"{prefix}:{subtask_index + 1}" if prefix else str(subtask_index + 1)
    return f"{prefix}> " if prefix else ""


def format_rows(batch: pa.RecordBatch, kinds: np.ndarray | None, prefix: str = ""
                ) -> list[str]:
    """The printed line of every row of ``batch`` (``kinds`` None: all ``+I``)."""
    n = batch.num_rows
    codes = np.zeros(n, dtype=np.int8) if kinds is None else np.asarray(kinds)
    heads = pa.array([prefix + label + "[" for label in _LABELS[codes]], pa.string())
    if batch.num_columns:
        fields = pc.binary_join_element_wise(*[format_column(c) for c in batch.columns], ", ")
    else:
        fields = pa.array([""] * n, pa.string())
    lines = pc.binary_join_element_wise(heads, fields, pa.array(["]"] * n, pa.string()), "")
    return lines.to_pylist()  # type: ignore[no-any-return]


def format_column(column: pa.Array) -> pa.Array:
    """Flink's text of every value of ``column`` (a string array without NULLs)."""
    t = column.type
    if T.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_date(t) or T.is_string(t):
        text = pc.cast(column, pa.string())
    elif pa.types.is_null(t):
        text = pa.nulls(len(column), pa.string())
    else:
        text = pa.array([None if v is None else java_text(v, t) for v in column.to_pylist()],
                        pa.string())
    return pc.fill_null(text, "null")


def java_text(value: Any, t: pa.DataType) -> str:
    """The ``toString`` of the Java object Flink makes of one non-NULL value of type ``t``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float):
        return java_float(value, single=pa.types.is_float32(t) or pa.types.is_float16(t))
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            utc = value.astimezone(datetime.UTC)
            return (f"{utc.date().isoformat()}T{utc.hour:02d}:{utc.minute:02d}:"
                    f"{utc.second:02d}{_fraction(utc.microsecond * 1000)}Z")
        return f"{value.date().isoformat()}T{_local_time(value.time())}"
    if isinstance(value, datetime.time):
        return _local_time(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    if isinstance(value, list) and pa.types.is_list(t) | pa.types.is_large_list(t):
        item = t.value_type
        return "[" + ", ".join("null" if v is None else java_text(v, item) for v in value) + "]"
    return str(value)


def _local_time(value: datetime.time) -> str:
    """``LocalTime.toString``: ``HH:mm``, then ``:ss`` and the fraction only when needed."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}{_fraction(value.microsecond * 1000)}"
    return text


def _fraction(nanos: int) -> str:
    if nanos == 0:
        return ""
    if nanos % 1_000_000 == 0:
        return f".{nanos // 1_000_000:03d}"
    if nanos % 1000 == 0:
        return f".{nanos // 1000:06d}"
    return f".{nanos:09d}"


def java_float(value: float, single: bool = False) -> str:
    """``Double.toString`` (``Float.toString`` when ``single``): the shortest digits that
    read back to the same value, plain within [1E-3, 1E7), else ``d.dddE<exp>``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = str(np.float32(value)) if single else repr(value)
    decimal = Decimal(shortest)
    sign, digits, _ = decimal.as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    exponent = decimal.adjusted()
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if exponent >= 0:
            whole, fraction = text[:exponent + 1].ljust(exponent + 1, "0"), text[exponent + 1:]
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + text
        return f"{minus}{whole}.{fraction or '0'}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{exponent}"
