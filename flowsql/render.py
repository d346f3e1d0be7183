"""Turning results into text: aligned tables for people, CSV and JSON lines for programs.

Every renderer works column-at-a-time with ``pyarrow.compute`` (cast, pad, join), so a large
result formats at Arrow speed; only nested and binary values, which Arrow cannot cast to text,
fall back to Python per value.

Conventions shared by all three formats:

- dates are ISO (``2024-01-31``), timestamps ``2024-01-31 12:00:00[.ffffff]``;
- decimals keep their scale (``1.50``), floats always show a fraction or exponent (``3.0``);
- renderers return text without a trailing newline; the caller decides on line endings.

Format-specific choices:

- table: NULL is shown as ``NULL``; numbers are right-aligned, everything else left-aligned;
  a value longer than :data:`MAX_CELL_WIDTH` characters is cut and ends with an ellipsis;
  newlines and tabs inside values are shown escaped so a row stays on one line;
  no line has trailing spaces.
- CSV: a header line, then one line per row; NULL is an empty field, the empty string is
  ``""`` so the two stay distinguishable; fields are quoted only when they must be.
- JSON lines: one object per row, keys in column order; NULL and non-finite floats are
  ``null``; booleans and integers are JSON literals. A decimal is written as a JSON number
  (exact digits, scale kept) when it has at most 15 significant digits, because then the
  double most JSON readers parse it into converts back to the same digits; a decimal with
  more significant digits is written as a string holding its exact value, so nothing is lost
  silently. Every other type (dates, timestamps, strings) is a JSON string.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["MAX_CELL_WIDTH", "RenderableResult", "render_change_rows", "render_csv",
           "render_json", "render_result", "render_table", "row_count_footer"]

MAX_CELL_WIDTH = 40
ELLIPSIS = "…"
NULL_TEXT = "NULL"
# A decimal of at most 15 significant digits survives text -> IEEE double -> shortest text.
_JSON_EXACT_DIGITS = 15
_SEPARATOR = " | "
_RULE_SEPARATOR = "-+-"


class RenderableResult(Protocol):
    """What :func:`render_result` reads of a statement's result (``flowsql.session.Result``
    has these): rendering sits below the session layer and must not import it."""

    @property
    def kind(self) -> str: ...
    @property
    def table(self) -> pa.Table | None: ...
    @property
    def message(self) -> str | None: ...


def render_result(result: RenderableResult, max_rows: int | None = 40) -> str:
    """A result as a person should see it: EXPLAIN as its plan text, anything with a table as
    an aligned table, DDL and SET as their message."""
    if result.kind == "explain" and result.table is not None:
        return "\n".join(_plain_text(result.table.column(0)).fill_null("").to_pylist())
    if result.table is not None:
        return render_table(result.table, max_rows=max_rows)
    return result.message or ""


def render_table(table: pa.Table, max_rows: int | None = 40, footer: bool = True) -> str:
    """An aligned text table of at most ``max_rows`` rows (all rows when None).

    With ``footer`` the last line counts the rows (see :func:`row_count_footer`); without it
    the caller reports the count itself (the REPL adds the elapsed time to that line).
    """
    total = table.num_rows
    shown = table if max_rows is None or total <= max_rows else table.slice(0, max_rows)
    lines: list[str] = []
    if table.num_columns > 0:
        cells, headers = [], []
        for name, column in zip(table.column_names, shown.columns):
            right = _is_numeric(column.type)
            text = _truncate(_display_escape(_plain_text(column)).fill_null(NULL_TEXT))
            header = _escape_header(name)
            if len(header) > MAX_CELL_WIDTH:
                header = header[:MAX_CELL_WIDTH - 1] + ELLIPSIS
            width = max(len(header), pc.max(pc.utf8_length(text)).as_py() or 0)
            pad = pc.utf8_lpad if right else pc.utf8_rpad
            cells.append(pad(text, width=width, padding=" "))
            headers.append(header.rjust(width) if right else header.ljust(width))
        lines.append(_SEPARATOR.join(headers).rstrip())
        lines.append(_RULE_SEPARATOR.join("-" * len(h) for h in headers))
        if shown.num_rows:
            rows = pc.binary_join_element_wise(*cells, _SEPARATOR)
            lines.extend(pc.utf8_rtrim_whitespace(rows).to_pylist())
    if footer:
        lines.append(row_count_footer(total, shown.num_rows))
    return "\n".join(lines)


def row_count_footer(total: int, shown: int | None = None, seconds: float | None = None) -> str:
    """``"3 rows"``, ``"1 row in 0.12 s"``, ``"100 rows (showing first 40)"``."""
    text = f"{total} row{'' if total == 1 else 's'}"
    if seconds is not None:
        text += f" in {seconds:.2f} s"
    if shown is not None and shown < total:
        text += f" (showing first {shown})"
    return text


def render_csv(table: pa.Table) -> str:
    """A header line and one line per row, fields separated by commas (RFC 4180 quoting)."""
    header = ",".join(_csv_quote_name(name) for name in table.column_names)
    if table.num_rows == 0 or table.num_columns == 0:
        return header
    fields = [_csv_field(column) for column in table.columns]
    rows = fields[0] if len(fields) == 1 else pc.binary_join_element_wise(*fields, ",")
    return "\n".join([header, *rows.to_pylist()])


def render_changelog(table: pa.Table | pa.RecordBatch, header: bool) -> str:
    """Changelog rows (first column ``op``) as ``op | col | ...`` lines, like Flink's
    tableau output; with ``header`` the column names come first."""
    lines = [" | ".join(table.schema.names)] if header else []
    if table.num_rows:
        texts = [_display_escape(_plain_text(c)).fill_null(NULL_TEXT) for c in table.columns]
        rows = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, " | ")
        lines.extend(rows.to_pylist())
    return "\n".join(lines)


def render_change_rows(table: pa.Table | pa.RecordBatch) -> str:
    """Changelog rows (first column ``op``) one per line in the shape Flink prints a row:
    the kind, then the values in brackets, e.g. ``+U[apple, 3]``."""
    if not table.num_rows:
        return ""
    ops = table.column(0)
    texts = [_display_escape(_plain_text(c)).fill_null(NULL_TEXT) for c in table.columns[1:]]
    if not texts:
        body: Any = pa.array([""] * table.num_rows, pa.string())
    elif len(texts) == 1:
        body = texts[0]
    else:
        body = pc.binary_join_element_wise(*texts, ", ")
    rows = pc.binary_join_element_wise(ops, "[", body, "]", "")
    return "\n".join(rows.to_pylist())


def render_json(table: pa.Table) -> str:
    """One JSON object per row, one row per line (JSON lines)."""
    if table.num_rows == 0:
        return ""
    if table.num_columns == 0:
        return "\n".join(["{}"] * table.num_rows)
    parts: list[pa.Array | pa.ChunkedArray | str] = []
    for index, (name, column) in enumerate(zip(table.column_names, table.columns)):
        prefix = "{" if index == 0 else ","
        parts.append(f"{prefix}{json.dumps(name)}:")
        parts.append(_json_value(column))
    parts.append("}")
    return "\n".join(pc.binary_join_element_wise(*parts, "").to_pylist())


# --- text of one column -------------------------------------------------------------------

def _is_numeric(dtype: pa.DataType) -> bool:
    return pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)


def _plain_text(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """The column as ``string`` values, nulls kept."""
    dtype = column.type
    if pa.types.is_dictionary(dtype):
        return _plain_text(pc.cast(column, dtype.value_type))
    if pa.types.is_floating(dtype):
        text = pc.cast(column, pa.string())
        # Arrow prints 3.0 as "3"; keep floats visibly distinct from integers.
        return pc.if_else(pc.match_substring_regex(text, r"^-?\d+$"),
                          pc.binary_join_element_wise(text, ".0", ""), text)
    if (pa.types.is_nested(dtype) or pa.types.is_binary(dtype)
            or pa.types.is_large_binary(dtype) or pa.types.is_fixed_size_binary(dtype)
            or pa.types.is_binary_view(dtype)):
        return pa.array([None if v is None else _python_text(v) for v in column.to_pylist()],
                        pa.string())
    return pc.cast(column, pa.string())


def _python_text(value: object) -> str:
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    return _compact_json(value)


def _compact_json(value: object) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


def _display_escape(text: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    for raw, shown in (("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
        text = pc.replace_substring(text, raw, shown)
    return text


def _escape_header(name: str) -> str:
    return name.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _truncate(text: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    too_long = pc.greater(pc.utf8_length(text), MAX_CELL_WIDTH)
    cut = pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(text, 0, MAX_CELL_WIDTH - 1), ELLIPSIS, "")
    return pc.if_else(too_long, cut, text)


# --- CSV ----------------------------------------------------------------------------------

def _csv_quote_name(name: str) -> str:
    if any(c in name for c in ',"\n\r') or name == "":
        return '"' + name.replace('"', '""') + '"'
    return name


def _csv_field(column: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    text = _plain_text(column)
    needs_quotes = pc.or_(pc.match_substring_regex(text, '[,"\r\n]'), pc.equal(text, ""))
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(text, '"', '""'), '"', "")
    return pc.if_else(needs_quotes, quoted, text).fill_null("")


# --- JSON ---------------------------------------------------------------------------------

_JSON_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_value(column: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """Each value as JSON text; nulls as ``null``."""
    dtype = column.type
    if pa.types.is_dictionary(dtype):
        return _json_value(pc.cast(column, dtype.value_type))
    if pa.types.is_nested(dtype):
        values = [_compact_json(v) for v in column.to_pylist()]
        return pa.array(values, pa.string())
    if pa.types.is_null(dtype):
        return pa.array(["null"] * len(column), pa.string())
    if pa.types.is_boolean(dtype) or pa.types.is_integer(dtype):
        return pc.cast(column, pa.string()).fill_null("null")
    if pa.types.is_floating(dtype):
        finite = pc.is_finite(column)
        return pc.if_else(finite, _plain_text(column), "null").fill_null("null")
    if pa.types.is_decimal(dtype):
        text = pc.cast(column, pa.string())
        digits = pc.utf8_length(pc.utf8_ltrim(pc.replace_substring_regex(text, r"[-.]", ""),
                                              characters="0"))
        exact = pc.less_equal(digits, _JSON_EXACT_DIGITS)
        return pc.if_else(exact, text, _json_string(text)).fill_null("null")
    return _json_string(_plain_text(column)).fill_null("null")


def _json_string(text: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Quote and escape as a JSON string (RFC 8259: backslash, quote, control characters)."""
    text = pc.replace_substring(text, "\\", "\\\\")
    text = pc.replace_substring(text, '"', '\\"')
    if pc.any(pc.match_substring_regex(text, "[\x00-\x1f]")).as_py():
        for code in range(0x20):
            char = chr(code)
            text = pc.replace_substring(text, char,
                                        _JSON_CONTROL_ESCAPES.get(char, f"\\u{code:04x}"))
    return pc.binary_join_element_wise('"', text, '"', "")
