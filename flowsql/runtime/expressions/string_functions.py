"""Flink's string functions beyond the DuckDB core set: CONCAT_WS, INITCAP, LOCATE,
SPLIT_INDEX, REGEXP_EXTRACT, REGEXP_REPLACE, TRIM with characters, ASCII, CHR, OVERLAY and
the IS_ALPHA / IS_DIGIT / IS_DECIMAL predicates.

Semantics are Flink's: CONCAT_WS skips NULL arguments but a NULL separator gives NULL;
SPLIT_INDEX counts from 0 and is NULL past the last piece (an empty separator leaves
the text whole, piece 0); LOCATE searches from 1 when the start is before 1; REGEXP_EXTRACT returns group
``index`` (0 = the whole match, the default) of the first match, NULL without a match
(a group that took no part in the match is '' here and NULL in Flink: RE2 through pyarrow
does not tell the two apart); INITCAP capitalizes a letter after a digit (Flink does not);
REGEXP_REPLACE's replacement refers to groups as ``$1`` (Java); ASCII is the first UTF-8
byte as a signed Java byte ('' gives 0); CHR takes the code modulo 256, '' for a negative
code; the IS_* predicates are false (not NULL) for NULL. Regular expressions
run on RE2, which has no back-references or look-around (Java has).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array, per_distinct, with_nulls_of

_NULL_STRING = pa.scalar(None, pa.string())


@register("concat_ws", strict=False)
def _concat_ws(call: Call, args: list[Node]) -> Run:
    separator, *values = args
    if separator.is_null_constant:
        return lambda batch: _NULL_STRING
    runs = [v.run for v in values if not v.is_null_constant]

    def run(batch: pa.RecordBatch) -> Datum:
        sep = separator.run(batch)
        if not runs:
            return pc.if_else(pc.is_valid(sep), "", _NULL_STRING)
        parts = [as_array(r(batch), batch.num_rows) for r in runs]
        joined = pc.binary_join_element_wise(*parts, pc.fill_null(sep, ""),
                                             null_handling="skip")
        return pc.if_else(pc.is_valid(sep), joined, _NULL_STRING) \
            if isinstance(sep, pa.Array) and sep.null_count else joined
    return run


@register("initcap")
def _initcap(call: Call, args: list[Node]) -> Run:
    run = args[0].run
    return lambda batch: pc.utf8_title(run(batch))


@register("locate")
def _locate(call: Call, args: list[Node]) -> Run:
    """LOCATE(needle, haystack[, start]): 1-based position at or after ``start``, 0 if none."""
    needle, haystack = args[0], args[1]
    start = args[2] if len(args) > 2 else None

    def find(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        text = as_array(haystack.run(batch), n)
        offset = 1 if start is None else start.run(batch)

        def from_position(values: Datum, begin: int) -> Datum:
            begin = max(int(begin), 1)  # a start before 1 searches from 1 (Flink)
            tail = pc.utf8_slice_codeunits(values, begin - 1)
            return _find(tail, needle.run(batch), n, begin - 1)
        if isinstance(offset, int):
            return from_position(text, offset)
        return per_distinct(text, offset, n, from_position, pa.int64())
    return find


def _find(text: pa.Array, needle: Datum, length: int, shift: int) -> Datum:
    def one(values: Datum, pattern: str) -> Datum:
        found = pc.greater_equal(pc.find_substring(values, pattern=pattern), 0)
        # The text before the first occurrence, measured in characters (not bytes).
        before = pc.list_element(pc.split_pattern(values, pattern=pattern, max_splits=1), 0) \
            if pattern else pa.scalar("")
        position = pc.add(pc.cast(pc.utf8_length(before), pa.int64()), 1 + shift)
        return pc.if_else(found, position, 0)
    return per_distinct(text, needle, length, one, pa.int64())


@register("split_index")
def _split_index(call: Call, args: list[Node]) -> Run:
    value, separator, index = args

    def piece(values: Datum, sep: str, i: int) -> Datum:
        if i < 0 or (sep == "" and i > 0):
            return pa.nulls(len(values), pa.string())
        if sep == "":  # no separator: the whole text is piece 0
            return values
        parts = pc.split_pattern(values, pattern=sep)
        return pc.list_element(pc.list_slice(parts, i, i + 1, return_fixed_size_list=True), 0)

    def run(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        values = as_array(value.run(batch), n)
        return per_distinct(
            values, separator.run(batch), n,
            lambda v, sep: per_distinct(v, index.run(batch), n,
                                        lambda w, i: piece(w, sep, int(i)), pa.string()),
            pa.string())
    return run


def named_groups(regex: str) -> tuple[str, int]:
    """``regex`` with every capturing group named ``g1``, ``g2``, ... and wrapped in ``g0``
    (pyarrow extracts named groups only); returns the pattern and the group count."""
    out = ["(?P<g0>"]
    count = 0
    i = 0
    in_class = False
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(" and not regex.startswith("?", i + 1):
            count += 1
            out.append(f"(?P<g{count}>")
            i += 1
            continue
        out.append(ch)
        i += 1
    out.append(")")
    return "".join(out), count


@register("regexp_extract")
def _regexp_extract(call: Call, args: list[Node]) -> Run:
    value, pattern = args[0], args[1]
    index = args[2] if len(args) > 2 else None

    def extract(values: Datum, regex: str, group: int) -> Datum:
        named, count = named_groups(regex)
        if not 0 <= group <= count:
            raise ExecutionError(f"REGEXP_EXTRACT: group {group} does not exist in '{regex}'")
        matched = pc.extract_regex(values, pattern=named)
        field = pc.struct_field(matched, [group])
        return pc.if_else(pc.is_valid(matched), field, _NULL_STRING)

    def run(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        values = as_array(value.run(batch), n)
        groups = pa.scalar(0, pa.int64()) if index is None else index.run(batch)
        return per_distinct(
            values, pattern.run(batch), n,
            lambda v, regex: per_distinct(v, groups, n, lambda w, g: extract(w, regex, int(g)),
                                          pa.string()),
            pa.string())
    return run


_JAVA_GROUP = re.compile(r"\$(\d)")


@register("regexp_replace")
def _regexp_replace(call: Call, args: list[Node]) -> Run:
    value, pattern, replacement = args

    def replace(values: Datum, regex: str, by: str) -> Datum:
        re2 = _JAVA_GROUP.sub(r"\\\1", by.replace("\\", "\\\\"))
        return pc.replace_substring_regex(values, pattern=regex, replacement=re2)

    def run(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        values = as_array(value.run(batch), n)
        by = replacement.run(batch)
        return per_distinct(
            values, pattern.run(batch), n,
            lambda v, regex: per_distinct(v, by, n, lambda w, b: replace(w, regex, str(b)),
                                          pa.string()),
            pa.string())
    return run


def _trim_chars(name: str, kernel: object) -> None:
    @register(name)
    def build(call: Call, args: list[Node]) -> Run:
        value, chars = args

        def run(batch: pa.RecordBatch) -> Datum:
            return per_distinct(value.run(batch), chars.run(batch), batch.num_rows,
                                lambda v, c: kernel(v, characters=str(c)),  # type: ignore[operator]
                                pa.string())
        return run


for _name, _kernel in (("trim_chars", pc.utf8_trim), ("ltrim_chars", pc.utf8_ltrim),
                       ("rtrim_chars", pc.utf8_rtrim)):
    _trim_chars(_name, _kernel)


@register("ascii")
def _ascii(call: Call, args: list[Node]) -> Run:
    """The first byte of the UTF-8 text as a signed (Java) byte: the character code for
    ASCII text, negative for others; 0 for ''."""
    run = args[0].run

    def first(batch: pa.RecordBatch) -> Datum:
        values = as_array(run(batch), batch.num_rows)
        binary = pc.cast(pc.fill_null(values, ""), pa.binary())
        head = pc.binary_slice(binary, 0, 1)
        # One byte per value ('' gets a NUL, hence code 0), read from the data buffer.
        padded = pc.binary_slice(pc.binary_join_element_wise(head, b"\x00", b""), 0, 1)
        codes = _first_bytes(as_array(padded, len(values)))
        # Java bytes are signed: 'é' (0xC3 0xA9) gives -61, as in Flink.
        return with_nulls_of(pa.array(codes.view(np.int8).astype(np.int32)), values)
    return first


def _first_bytes(one_byte_each: pa.Array) -> np.ndarray:
    """The byte of each one-byte binary value, straight from the data buffer."""
    arr = one_byte_each
    data = arr.buffers()[2]
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32,
                            count=arr.offset + len(arr) + 1)[arr.offset:]
    return np.frombuffer(data, dtype=np.uint8)[offsets[:-1]]


_BYTE_CHARS = pa.array([chr(i) for i in range(256)])


@register("chr")
def _chr(call: Call, args: list[Node]) -> Run:
    run = args[0].run

    def character(batch: pa.RecordBatch) -> Datum:
        codes = as_array(run(batch), batch.num_rows)
        negative = pc.fill_null(pc.less(codes, 0), False)
        index = pc.remainder(pc.max_element_wise(pc.cast(codes, pa.int64()), 0), 256)
        chars = with_nulls_of(as_array(pc.take(_BYTE_CHARS, index), len(codes)), codes)
        return pc.if_else(negative, "", chars)
    return character


@register("overlay")
def _overlay(call: Call, args: list[Node]) -> Run:
    """OVERLAY(s PLACING r FROM p [FOR l]): characters p .. p+l-1 replaced by r; l defaults
    to r's length."""
    value, replacement, position = args[0], args[1], args[2]
    count = args[3] if len(args) > 3 else None

    def run(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        values = as_array(value.run(batch), n)
        by = as_array(replacement.run(batch), n)
        start = pc.subtract(pc.cast(as_array(position.run(batch), n), pa.int64()), 1)
        length = pc.utf8_length(by) if count is None else \
            pc.cast(as_array(count.run(batch), n), pa.int64())
        head = _slice(values, pa.scalar(0, pa.int64()), start, n)
        tail = _slice(values, pc.add(start, length), None, n)
        return pc.binary_join_element_wise(head, by, tail, "", null_handling="emit_null")
    return run


def _slice(values: pa.Array, start: Datum, stop: Datum | None, n: int) -> Datum:
    def cut(v: Datum, begin: int) -> Datum:
        return pc.utf8_slice_codeunits(v, max(int(begin), 0))
    if stop is None:
        return per_distinct(values, start, n, cut, pa.string())
    return per_distinct(values, stop, n,
                        lambda v, end: pc.utf8_slice_codeunits(v, 0, max(int(end), 0)),
                        pa.string())


def _predicate(name: str, kernel: object) -> None:
    @register(name, strict=False)
    def build(call: Call, args: list[Node]) -> Run:
        run = args[0].run

        def test(batch: pa.RecordBatch) -> Datum:
            values = as_array(run(batch), batch.num_rows)
            if pa.types.is_null(values.type):
                return pa.array(np.zeros(len(values), bool))
            return pc.fill_null(kernel(values), False)  # type: ignore[operator]
        return test


_DECIMAL_TEXT = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
for _name, _kernel in (
        ("is_alpha", lambda v: pc.and_(pc.utf8_is_alpha(v), pc.greater(pc.utf8_length(v), 0))),
        ("is_digit", lambda v: pc.and_(pc.utf8_is_digit(v), pc.greater(pc.utf8_length(v), 0))),
        ("is_decimal", lambda v: pc.match_substring_regex(v, _DECIMAL_TEXT))):
    _predicate(_name, _kernel)
