"""String functions with DuckDB's semantics: positions count characters from 1, a negative
position counts from the end, out-of-range parts give '' (not NULL), TRIM removes spaces
only, CONCAT skips NULL arguments, LIKE has no escape character unless ESCAPE names one.

Pattern-like arguments (LIKE patterns, search strings, positions, widths) are almost always
literals and then cost one kernel call; a column in such a place is handled once per
distinct value (``support.per_distinct``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import (
    as_array,
    conform,
    per_distinct,
    typed_null,
    with_nulls_of,
)

_BIG = 2**31 - 1


def _with_option(call: Call, args: list[Node], kernel: Callable[[Datum, Any], Datum],
                 out_type: pa.DataType) -> Run:
    """``kernel(first argument, value of the second)``, the second usually a literal."""
    value, option = args[0].run, args[1].run
    return lambda batch: per_distinct(value(batch), option(batch), batch.num_rows, kernel,
                                      out_type)


def _unary(name: str, kernel: Callable[[Datum], Datum]) -> None:
    @register(name)
    def build(call: Call, args: list[Node]) -> Run:
        run = args[0].run
        return lambda batch: kernel(run(batch))


_unary("upper", pc.utf8_upper)
_unary("lower", pc.utf8_lower)
_unary("reverse", pc.utf8_reverse)
_unary("trim", lambda s: pc.utf8_trim(s, characters=" "))
_unary("ltrim", lambda s: pc.utf8_ltrim(s, characters=" "))
_unary("rtrim", lambda s: pc.utf8_rtrim(s, characters=" "))
_unary("length", lambda s: pc.cast(pc.utf8_length(s), T.INT64))


# -- LIKE ------------------------------------------------------------------------------------

def arrow_like_pattern(pattern: str, escape: str | None) -> str:
    """The SQL pattern in pyarrow's LIKE syntax, whose escape character is always a
    backslash: SQL's escape character (if any) becomes a backslash, literal backslashes are
    doubled."""
    if escape is not None and len(escape) != 1:
        raise ExecutionError(f"the ESCAPE of LIKE must be one character, got '{escape}'")
    out: list[str] = []
    chars = iter(pattern)
    for ch in chars:
        if escape is not None and ch == escape:
            nxt = next(chars, None)
            if nxt is None:
                raise ExecutionError(f"LIKE pattern '{pattern}' ends with its escape character")
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
    return "".join(out)


def _like(ignore_case: bool) -> Callable[[Call, list[Node]], Run]:
    def build(call: Call, args: list[Node]) -> Run:
        escape: str | None = None
        if len(args) == 3:
            if not args[2].constant:
                raise ExecutionError(f"the ESCAPE of LIKE must be a constant in {call}")
            escape = args[2].python_value

        def match(values: Datum, pattern: str) -> Datum:
            return pc.match_like(values, arrow_like_pattern(pattern, escape),
                                 ignore_case=ignore_case)
        return _with_option(call, args, match, T.BOOL)
    return build


register("like")(_like(False))
register("ilike")(_like(True))


@register("regexp_matches")
def _regexp_matches(call: Call, args: list[Node]) -> Run:
    return _with_option(call, args, lambda s, p: pc.match_substring_regex(s, p), T.BOOL)


@register("contains")
def _contains(call: Call, args: list[Node]) -> Run:
    return _with_option(call, args, lambda s, p: pc.match_substring(s, p), T.BOOL)


@register("starts_with")
def _starts_with(call: Call, args: list[Node]) -> Run:
    return _with_option(call, args, lambda s, p: pc.starts_with(s, p), T.BOOL)


@register("ends_with")
def _ends_with(call: Call, args: list[Node]) -> Run:
    return _with_option(call, args, lambda s, p: pc.ends_with(s, p), T.BOOL)


@register("strpos")
def _strpos(call: Call, args: list[Node]) -> Run:
    def position(values: Datum, needle: str) -> Datum:
        if needle == "":
            return pc.if_else(pc.is_valid(values), pa.scalar(1, T.INT64), typed_null(T.INT64))
        found = pc.greater_equal(pc.find_substring(values, needle), 0)
        before = pc.list_element(pc.split_pattern(values, needle, max_splits=1), 0)
        chars = pc.add(pc.cast(pc.utf8_length(before), T.INT64), 1)
        return pc.if_else(found, chars, pa.scalar(0, T.INT64))
    return _with_option(call, args, position, T.INT64)


@register("replace")
def _replace(call: Call, args: list[Node]) -> Run:
    value, pattern, replacement = (a.run for a in args)

    def replace(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        s, with_ = value(batch), replacement(batch)
        if not isinstance(with_, pa.Scalar):
            raise ExecutionError(f"the replacement of replace() must be a constant in {call}")
        if not with_.is_valid:
            return typed_null(T.STRING)
        text = with_.as_py()

        def one(values: Datum, needle: str) -> Datum:
            # An empty search string matches nothing (and must not reach the kernel).
            return values if needle == "" else pc.replace_substring(values, needle, text)
        return per_distinct(s, pattern(batch), n, one, T.STRING)
    return replace


@register("concat", strict=False)
def _concat(call: Call, args: list[Node]) -> Run:
    live = [a.run for a in args if not a.is_null_constant]
    if not live:
        empty = pa.scalar("", T.STRING)
        return lambda batch: empty

    def concat(batch: pa.RecordBatch) -> Datum:
        # NULLs are filled rather than skipped: binary_join_element_wise with
        # null_handling="skip" returns too few rows on some inputs (pyarrow 26).
        parts = [pc.fill_null(conform(r(batch), T.STRING), "") for r in live]
        if len(parts) == 1:
            return parts[0]
        return pc.binary_join_element_wise(*parts, "")
    return concat


# -- slicing ---------------------------------------------------------------------------------

def _slice(values: Datum, start: int, stop: int) -> Datum:
    if stop <= start and stop >= 0 and start >= 0:
        return pc.if_else(pc.is_valid(values), pa.scalar("", T.STRING), typed_null(T.STRING))
    return pc.utf8_slice_codeunits(values, start=start, stop=stop)


def substring(values: Datum, offset: int, length: int | None) -> Datum:
    """DuckDB's SUBSTRING(values, offset, length): offset 0 is the position before the first
    character, a negative offset counts from the end, a negative length takes characters
    before the offset."""
    if length is None:
        length = _BIG
    if length == 0:
        return _slice(values, 0, 0)
    if offset > 0:
        start = offset - 1
        if length > 0:
            return _slice(values, start, min(start + length, _BIG))
        return _slice(values, max(0, start + length), start)
    if offset == 0:
        return _slice(values, 0, length - 1) if length > 1 else _slice(values, 0, 0)
    # Negative offset: counted from each string's end; pyarrow's negative slice bounds do
    # exactly that, clamping a start before the first character as DuckDB does.
    if length > 0:
        end = offset + length
        return pc.utf8_slice_codeunits(values, start=offset, stop=end if end < 0 else _BIG)
    return pc.utf8_slice_codeunits(values, start=max(offset + length, -_BIG), stop=offset)


@register("substring")
def _substring(call: Call, args: list[Node]) -> Run:
    value, offset = args[0], args[1]
    length = args[2] if len(args) == 3 else None

    def run(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        s = value.run(batch)
        if length is None:
            return per_distinct(s, offset.run(batch), n, lambda v, o: substring(v, o, None),
                                T.STRING)
        count = length.run(batch)
        return per_distinct(s, offset.run(batch), n,
                            lambda v, o: per_distinct(v, count, n,
                                                      lambda w, c: substring(w, o, c),
                                                      T.STRING), T.STRING)
    return run


def _left(values: Datum, count: int) -> Datum:
    return _slice(values, 0, count) if count >= 0 else pc.utf8_slice_codeunits(
        values, start=0, stop=count)


def _right(values: Datum, count: int) -> Datum:
    # A positive count keeps the last characters, a negative one drops the first ones:
    # both are a slice from -count.
    if count == 0:
        return _slice(values, 0, 0)
    return pc.utf8_slice_codeunits(values, start=-count)


@register("left")
def _left_builder(call: Call, args: list[Node]) -> Run:
    return _with_option(call, args, _left, T.STRING)


@register("right")
def _right_builder(call: Call, args: list[Node]) -> Run:
    return _with_option(call, args, _right, T.STRING)


def _pad(left: bool) -> Callable[[Call, list[Node]], Run]:
    def build(call: Call, args: list[Node]) -> Run:
        value, width, fill = args

        def pad(batch: pa.RecordBatch) -> Datum:
            n = batch.num_rows
            filler = fill.run(batch)
            if not isinstance(filler, pa.Scalar):
                raise ExecutionError(f"the fill of {call.name}() must be a constant in {call}")
            if not filler.is_valid:
                return typed_null(T.STRING)
            text = filler.as_py()

            def one(values: Datum, size: int) -> Datum:
                size = max(size, 0)
                cut = _slice(values, 0, size)
                missing = pc.subtract(size, pc.cast(pc.utf8_length(cut), T.INT64))
                if text == "":
                    if pc.any(pc.greater(missing, 0)).as_py():
                        raise ExecutionError(f"{call.name}(): padding needs a non-empty fill")
                    return cut
                pads = pa.array([(text * (k // len(text) + 1))[:k] for k in range(size + 1)])
                padding = pc.take(pads, missing)
                joined = (pc.binary_join_element_wise(padding, cut, "") if left
                          else pc.binary_join_element_wise(cut, padding, ""))
                return joined
            return per_distinct(value.run(batch), width.run(batch), n, one, T.STRING)
        return pad
    return build


register("lpad")(_pad(True))
register("rpad")(_pad(False))


@register("repeat")
def _repeat(call: Call, args: list[Node]) -> Run:
    value, count = (a.run for a in args)

    def repeat(batch: pa.RecordBatch) -> Datum:
        times = pc.max_element_wise(pc.cast(count(batch), T.INT64), pa.scalar(0, T.INT64),
                                    skip_nulls=False)
        return pc.binary_repeat(value(batch), times)
    return repeat


def _nth_part(values: Datum, delimiter: str, index: int, length: int) -> Datum:
    """The ``index``-th (1-based) part of each string split at ``delimiter``; '' when out
    of range; NULL only for NULL input."""
    empty = pa.scalar("", T.STRING)
    if index == 0:
        return pc.if_else(pc.is_valid(values), empty, typed_null(T.STRING))
    if delimiter == "":
        parts = pc.utf8_slice_codeunits(values, 0, _BIG)
        return parts if index in (1, -1) else pc.if_else(pc.is_valid(values), empty,
                                                         typed_null(T.STRING))
    if index < 0:
        flipped = _nth_part(pc.utf8_reverse(values), delimiter[::-1], -index, length)
        return pc.utf8_reverse(flipped)
    arr = as_array(values, length)
    lists = pc.split_pattern(arr, delimiter)
    picked = pc.list_slice(lists, index - 1, index)
    has_part = pc.greater(pc.list_value_length(picked), 0)
    flat = pc.list_flatten(picked)
    out = pc.replace_with_mask(pa.repeat(empty, len(arr)), pc.fill_null(has_part, False), flat)
    return with_nulls_of(out, arr)


@register("split_part")
def _split_part(call: Call, args: list[Node]) -> Run:
    value, delimiter, index = args

    def split(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        d = delimiter.run(batch)
        if not isinstance(d, pa.Scalar):
            raise ExecutionError(f"the delimiter of split_part() must be a constant in {call}")
        text = d.as_py()
        return per_distinct(value.run(batch), index.run(batch), n,
                            lambda v, i: _nth_part(v, text, i, n), T.STRING)
    return split
