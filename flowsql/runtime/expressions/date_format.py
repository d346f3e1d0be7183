"""Java date patterns (SimpleDateFormat, as Flink's DATE_FORMAT, FROM_UNIXTIME, TO_TIMESTAMP,
TO_DATE and UNIX_TIMESTAMP take them) over Arrow timestamps.

A pattern is translated once per call into pieces: literal text, or a vectorized field
(``yyyy`` -> the zero-padded year, ``MMM`` -> the abbreviated month name, ``SSS`` ->
milliseconds, ...). Formatting joins the pieces element-wise; parsing translates the
pattern into a strptime format. A letter the translation does not know is an error naming
it, never a silently wrong result. Only wall-clock values are formatted and parsed here: the
binder turns an instant into its local time in the session zone first (``ltz_to_local``),
and UNIX_TIMESTAMP carries the zone its text is read in as its third argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array, per_distinct
from flowsql.runtime.expressions.time_zone import constant_zone, instants_of_local

Piece = Callable[[pa.Array], Datum]

DEFAULT_TIMESTAMP_PATTERN = "yyyy-MM-dd HH:mm:ss"
DEFAULT_DATE_PATTERN = "yyyy-MM-dd"
_TOKEN = re.compile(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+")


def _number(field: Callable[[pa.Array], Datum], width: int) -> Piece:
    def piece(ts: pa.Array) -> Datum:
        text = pc.cast(field(ts), pa.string())
        return pc.utf8_lpad(text, width=width, padding="0") if width > 1 else text
    return piece


def _strftime(fmt: str) -> Piece:
    return lambda ts: pc.strftime(ts, format=fmt, locale="C")


def _hour12(ts: pa.Array) -> Datum:
    hour = pc.remainder(pc.hour(ts), 12)
    return pc.if_else(pc.equal(hour, 0), 12, hour)


def _field(letter: str, count: int) -> Piece:
    if letter == "y":
        if count == 2:
            return _number(lambda ts: pc.remainder(pc.year(ts), 100), 2)
        return _number(pc.year, count)
    if letter == "M":
        if count >= 4:
            return _strftime("%B")
        if count == 3:
            return _strftime("%b")
        return _number(pc.month, count)
    if letter == "E":
        return _strftime("%A" if count >= 4 else "%a")
    if letter == "a":
        return _strftime("%p")
    simple: dict[str, Callable[[pa.Array], Datum]] = {
        "d": pc.day, "H": pc.hour, "m": pc.minute, "s": pc.second, "D": pc.day_of_year,
        "S": pc.millisecond, "h": _hour12, "u": lambda ts: pc.day_of_week(ts, count_from_zero=False),
    }
    if letter in simple:
        return _number(simple[letter], count)
    if letter in "ZX":
        return lambda ts: pa.scalar("+0000" if letter == "Z" else "Z")
    raise ExecutionError(f"unsupported letter '{letter}' in a date pattern")


@lru_cache(maxsize=256)
def format_pieces(pattern: str) -> tuple[Piece | str, ...]:
    """The pattern as literal strings and field pieces, in order."""
    pieces: list[Piece | str] = []
    for match in _TOKEN.finditer(pattern):
        quoted, letter = match.group(1), match.group(2)
        if quoted is not None:
            pieces.append(quoted if quoted else "'")
        elif letter is not None:
            pieces.append(_field(letter, len(match.group(0))))
        else:
            pieces.append(match.group(0))
    return tuple(pieces)


def format_timestamps(ts: pa.Array, pattern: str) -> pa.Array:
    """``ts`` (timestamp or date) formatted with the Java ``pattern``; NULL stays NULL."""
    if pa.types.is_date(ts.type):
        ts = pc.cast(ts, pa.timestamp("s"))
    elif ts.type.tz is not None:
        ts = pc.local_timestamp(ts)
    parts = [pa.scalar(p) if isinstance(p, str) else p(ts) for p in format_pieces(pattern)]
    if not parts:
        return pc.if_else(pc.is_valid(ts), "", pa.scalar(None, pa.string()))
    return pc.binary_join_element_wise(*parts, "", null_handling="emit_null") \
        if len(parts) > 1 else pc.if_else(pc.is_valid(ts), parts[0], None)


_STRPTIME = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "M": "%m", "dd": "%d", "d": "%d",
             "HH": "%H", "H": "%H", "mm": "%M", "m": "%M", "ss": "%S", "s": "%S",
             "MMM": "%b", "MMMM": "%B", "hh": "%I", "h": "%I", "a": "%p"}


@lru_cache(maxsize=256)
def strptime_format(pattern: str) -> str:
    """The strptime spelling of a Java parsing pattern (fields without fractions)."""
    out: list[str] = []
    for match in _TOKEN.finditer(pattern):
        quoted, letter = match.group(1), match.group(2)
        if quoted is not None:
            out.append((quoted or "'").replace("%", "%%"))
        elif letter is not None:
            spelled = _STRPTIME.get(match.group(0))
            if spelled is None:
                raise ExecutionError(f"unsupported field '{match.group(0)}' in the parsing "
                                     f"pattern '{pattern}'")
            out.append(spelled)
        else:
            out.append(match.group(0).replace("%", "%%"))
    return "".join(out)


def parse_timestamps(text: Datum, pattern: str | None, unit: str) -> Datum:
    """Strings to ``timestamp(unit)``; a string that does not match is NULL (Flink)."""
    if pattern is None:
        # Flink's default accepts 'yyyy-MM-dd[ HH:mm:ss[.fraction]]'.
        trimmed = pc.utf8_trim_whitespace(text)
        ok = pc.match_substring_regex(
            trimmed, r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}:\d{2}(\.\d{1,9})?)?$")
        ok = pc.fill_null(ok, False)
        kept = pc.if_else(ok, trimmed, pa.scalar(None, pa.string()))
        return _cast_or_null(kept, pa.timestamp(unit))
    return pc.strptime(text, format=strptime_format(pattern), unit=unit, error_is_null=True)


def _cast_or_null(text: Datum, target: pa.DataType) -> Datum:
    try:
        return pc.cast(text, target)
    except pa.ArrowInvalid:
        # Valid shape, impossible value: only a value such as '2024-13-01 00:00:00' gets here: NULL for the bad ones.
        day_ok = pc.is_valid(pc.strptime(pc.utf8_slice_codeunits(text, 0, 10),
                                         format="%Y-%m-%d", unit="s", error_is_null=True))
        return pc.cast(pc.if_else(day_ok, text, pa.scalar(None, pa.string())), target)


def _pattern_arg(args: list[Node], index: int) -> Node | None:
    return args[index] if len(args) > index else None


def _with_pattern(node: Node | None, default: str | None, batch: pa.RecordBatch,
                  values: Datum, kernel: Callable[[Datum, str | None], Datum],
                  out_type: pa.DataType) -> Datum:
    if node is None:
        return kernel(values, default)
    return per_distinct(values, node.run(batch), batch.num_rows, kernel, out_type)


@register("date_format")
def _date_format(call: Call, args: list[Node]) -> Run:
    value, pattern = args

    def run(batch: pa.RecordBatch) -> Datum:
        ts = as_array(value.run(batch), batch.num_rows)
        if not (pa.types.is_timestamp(ts.type) or pa.types.is_date(ts.type)):
            ts = parse_timestamps(ts, None, "us")
        return _with_pattern(pattern, None, batch, ts,
                             lambda v, p: format_timestamps(v, str(p)), pa.string())
    return run


@register("from_unixtime")
def _from_unixtime(call: Call, args: list[Node]) -> Run:
    seconds, pattern = args[0], _pattern_arg(args, 1)

    def run(batch: pa.RecordBatch) -> Datum:
        secs = as_array(seconds.run(batch), batch.num_rows)
        ts = pc.cast(pc.cast(secs, pa.int64()), pa.timestamp("s"))
        return _with_pattern(pattern, DEFAULT_TIMESTAMP_PATTERN, batch, ts,
                             lambda v, p: format_timestamps(v, str(p)), pa.string())
    return run


@register("to_timestamp")
def _to_timestamp(call: Call, args: list[Node]) -> Run:
    text, pattern = args[0], _pattern_arg(args, 1)
    unit = call.dtype.unit

    def run(batch: pa.RecordBatch) -> Datum:
        return _with_pattern(pattern, None, batch, text.run(batch),
                             lambda v, p: parse_timestamps(v, p, unit), call.dtype)
    return run


@register("to_date")
def _to_date(call: Call, args: list[Node]) -> Run:
    text, pattern = args[0], _pattern_arg(args, 1)

    def parse(values: Datum, p: str | None) -> Datum:
        ts = pc.strptime(values, format=strptime_format(p or DEFAULT_DATE_PATTERN), unit="s",
                         error_is_null=True)
        return pc.cast(ts, pa.date32())

    def run(batch: pa.RecordBatch) -> Datum:
        return _with_pattern(pattern, None, batch, text.run(batch), parse, pa.date32())
    return run


@register("unix_timestamp")
def _unix_timestamp(call: Call, args: list[Node]) -> Run:
    """Epoch seconds of text read as wall-clock time in the zone of argument 3 (UTC
    without it)."""
    text, pattern = args[0], _pattern_arg(args, 1)
    zone = constant_zone(call, args[2]) if len(args) > 2 else "UTC"

    def parse(values: Datum, p: str | None) -> Datum:
        ts = pc.strptime(values, format=strptime_format(p or DEFAULT_TIMESTAMP_PATTERN),
                         unit="s", error_is_null=True)
        if zone != "UTC":
            shifted = instants_of_local(as_array(ts, 1) if isinstance(ts, pa.Scalar) else ts,
                                        zone)
            ts = shifted if isinstance(ts, pa.Array) else shifted[0]
        return pc.cast(ts, pa.int64())

    def run(batch: pa.RecordBatch) -> Datum:
        return _with_pattern(pattern, None, batch, text.run(batch), parse, pa.int64())
    return run


@register("to_timestamp_ltz")
def _to_timestamp_ltz(call: Call, args: list[Node]) -> Run:
    """Epoch seconds (precision 0) or milliseconds (precision 3) as TIMESTAMP_LTZ(3)."""
    value = args[0]
    precision = args[1].python_value if len(args) > 1 and args[1].constant else 3
    if precision not in (0, 3):
        raise ExecutionError(f"TO_TIMESTAMP_LTZ precision must be 0 or 3, got {precision}")
    factor = 1000 if precision == 0 else 1

    def run(batch: pa.RecordBatch) -> Datum:
        raw = value.run(batch)
        if raw.type.id in (pa.float32().id, pa.float64().id) or pa.types.is_decimal(raw.type):
            millis = pc.cast(pc.trunc(pc.multiply(pc.cast(raw, pa.float64()), float(factor))),
                             pa.int64())
        else:
            millis = pc.multiply_checked(pc.cast(raw, pa.int64()), factor)
        return pc.cast(millis, call.dtype)
    return run
