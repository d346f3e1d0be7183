"""Function names and result types: SQL spelling -> canonical planner name and type rule.

Scalar names are the keys of ``flowsql.planner.expressions.FUNCTIONS``. A type rule takes
the bound argument types and returns the result type, or None when the arguments do not fit
(the binder turns that into a type error naming the call).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from flowsql.planner import types as T

TypeRule = Callable[[list[pa.DataType]], pa.DataType | None]


def _string(args: list[pa.DataType]) -> pa.DataType | None:
    return T.STRING


def _int64(args: list[pa.DataType]) -> pa.DataType | None:
    return T.INT64


def _bool(args: list[pa.DataType]) -> pa.DataType | None:
    return T.BOOL


def _same_numeric(args: list[pa.DataType]) -> pa.DataType | None:
    return args[0] if T.is_numeric(args[0]) or T.is_null(args[0]) else None


def _float(args: list[pa.DataType]) -> pa.DataType | None:
    return T.FLOAT64 if all(T.is_numeric(a) or T.is_null(a) for a in args) else None


def _round(args: list[pa.DataType]) -> pa.DataType | None:
    t = args[0]
    if T.is_decimal(t):
        return t
    return t if T.is_numeric(t) or T.is_null(t) else None


def _floor_ceil(args: list[pa.DataType]) -> pa.DataType | None:
    t = args[0]
    if T.is_decimal(t):
        return pa.decimal128(max(t.precision - t.scale, 1), 0)
    return t if T.is_numeric(t) else None


def _sign(args: list[pa.DataType]) -> pa.DataType | None:
    return T.INT64 if T.is_numeric(args[0]) else None


def _common(args: list[pa.DataType]) -> pa.DataType | None:
    result = args[0]
    for a in args[1:]:
        result = T.common_type(result, a)
        if result is None:
            return None
    return result


def _date_trunc(args: list[pa.DataType]) -> pa.DataType | None:
    return args[1] if T.is_temporal(args[1]) else None


def _int32(args: list[pa.DataType]) -> pa.DataType | None:
    return T.INT32


def _timestampdiff(args: list[pa.DataType]) -> pa.DataType | None:
    return T.INT32 if all(T.is_temporal(a) or T.is_null(a) for a in args[1:]) else None


def _formattable(args: list[pa.DataType]) -> pa.DataType | None:
    first = args[0]
    return T.STRING if T.is_temporal(first) or T.is_string(first) or T.is_null(first) else None


def _integer_argument(args: list[pa.DataType]) -> pa.DataType | None:
    return T.STRING if T.is_integer(args[0]) or T.is_null(args[0]) else None


def _to_timestamp_ltz(args: list[pa.DataType]) -> pa.DataType | None:
    return pa.timestamp("ms", "UTC") if T.is_numeric(args[0]) or T.is_null(args[0]) else None


SCALAR_TYPES: dict[str, TypeRule] = {
    "upper": _string, "lower": _string, "trim": _string, "ltrim": _string, "rtrim": _string,
    "concat": _string, "substring": _string, "replace": _string, "left": _string,
    "right": _string, "reverse": _string, "lpad": _string, "rpad": _string, "repeat": _string,
    "split_part": _string,
    "length": _int64, "strpos": _int64,
    "starts_with": _bool, "ends_with": _bool, "regexp_matches": _bool, "contains": _bool,
    "abs": _same_numeric, "round": _round, "floor": _floor_ceil, "ceil": _floor_ceil,
    "sqrt": _float, "power": _float, "ln": _float, "log10": _float, "exp": _float,
    "sign": _sign, "greatest": _common, "least": _common, "coalesce": _common,
    "nullif": lambda args: args[0],
    "date_trunc": _date_trunc,
    "timestampdiff": _timestampdiff, "ceil_temporal": _date_trunc,
    "date_format": _formattable, "from_unixtime": _integer_argument,
    "to_timestamp": lambda args: pa.timestamp("ms"), "to_date": lambda args: T.DATE,
    "unix_timestamp": _int64, "to_timestamp_ltz": _to_timestamp_ltz,
    "concat_ws": _string, "initcap": _string, "locate": _int64, "split_index": _string,
    "regexp_extract": _string, "regexp_replace": _string, "trim_chars": _string,
    "ltrim_chars": _string, "rtrim_chars": _string, "ascii": _int32,
    "chr": _integer_argument, "overlay": _string,
    "is_alpha": _bool, "is_digit": _bool, "is_decimal": _bool,
    "md5": _string, "sha1": _string, "sha2": _string, "sha224": _string, "sha256": _string,
    "sha384": _string, "sha512": _string, "to_base64": _string, "from_base64": _string,
    "json_value": _string, "json_query": _string, "json_exists": _bool,
    "log": _float, "truncate": _round,
    **{name: _float for name in ("sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2",
                                 "sinh", "cosh", "tanh", "degrees", "radians")},
}

# Arguments that are strings by contract: non-string arguments are cast to VARCHAR.
STRING_ARGS: dict[str, tuple[int, ...]] = {
    "upper": (0,), "lower": (0,), "trim": (0,), "ltrim": (0,), "rtrim": (0,),
    "length": (0,), "substring": (0,), "replace": (0, 1, 2), "strpos": (0, 1),
    "starts_with": (0, 1), "ends_with": (0, 1), "left": (0,), "right": (0,),
    "reverse": (0,), "lpad": (0, 2), "rpad": (0, 2), "repeat": (0,), "split_part": (0, 1),
    "regexp_matches": (0, 1), "contains": (0, 1),
    "date_format": (1,), "to_timestamp": (0, 1), "to_date": (0, 1), "unix_timestamp": (0, 1),
    "from_unixtime": (1,), "initcap": (0,),
    "locate": (0, 1), "split_index": (0, 1), "regexp_extract": (0, 1),
    "regexp_replace": (0, 1, 2), "trim_chars": (0, 1), "ltrim_chars": (0, 1),
    "rtrim_chars": (0, 1), "ascii": (0,), "overlay": (0, 1), "is_alpha": (0,),
    "is_digit": (0,), "is_decimal": (0,), "md5": (0,), "sha1": (0,), "sha2": (0,),
    "sha224": (0,), "sha256": (0,), "sha384": (0,), "sha512": (0,), "to_base64": (0,),
    "from_base64": (0,), "json_value": (0, 1), "json_query": (0, 1), "json_exists": (0, 1),
}

# Functions of doubles: every argument is cast to DOUBLE.
FLOAT_ARGS = frozenset({"sqrt", "power", "ln", "log10", "exp", "log", "sin", "cos", "tan",
                        "cot", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
                        "degrees", "radians"})

# Arguments that are integers by contract (positions, counts).
INT_ARGS: dict[str, tuple[int, ...]] = {
    "substring": (1, 2), "left": (1,), "right": (1,), "lpad": (1,), "rpad": (1,),
    "repeat": (1,), "split_part": (2,), "round": (1,),
    "locate": (2,), "split_index": (2,), "regexp_extract": (2,), "overlay": (2, 3),
    "sha2": (1,), "truncate": (1,), "to_timestamp_ltz": (1,),
}

# SQL names (lower case, as written) that map to a canonical scalar name.
SCALAR_ALIASES: dict[str, str] = {
    "upper": "upper", "ucase": "upper", "lower": "lower", "lcase": "lower",
    "trim": "trim", "ltrim": "ltrim", "rtrim": "rtrim", "btrim": "trim",
    "length": "length", "char_length": "length", "character_length": "length", "len": "length",
    "concat": "concat", "substring": "substring", "substr": "substring", "replace": "replace",
    "strpos": "strpos", "instr": "strpos", "position": "strpos", "left": "left", "right": "right",
    "reverse": "reverse", "lpad": "lpad", "rpad": "rpad", "repeat": "repeat",
    "split_part": "split_part", "starts_with": "starts_with", "ends_with": "ends_with",
    "regexp_matches": "regexp_matches", "regexp_like": "regexp_matches", "contains": "contains",
    "abs": "abs", "round": "round", "floor": "floor", "ceil": "ceil", "ceiling": "ceil",
    "sqrt": "sqrt", "power": "power", "pow": "power", "ln": "ln", "log10": "log10",
    "exp": "exp", "sign": "sign", "greatest": "greatest", "least": "least",
    "coalesce": "coalesce", "ifnull": "coalesce", "nvl": "coalesce", "nullif": "nullif",
    "date_trunc": "date_trunc",
    "date_format": "date_format", "from_unixtime": "from_unixtime",
    "to_timestamp": "to_timestamp", "to_date": "to_date", "unix_timestamp": "unix_timestamp",
    "to_timestamp_ltz": "to_timestamp_ltz", "concat_ws": "concat_ws", "initcap": "initcap",
    "split_index": "split_index", "regexp_extract": "regexp_extract",
    "regexp_replace": "regexp_replace", "regexp": "regexp_matches", "ascii": "ascii",
    "chr": "chr", "is_alpha": "is_alpha", "is_digit": "is_digit", "is_decimal": "is_decimal",
    "md5": "md5", "sha1": "sha1", "sha": "sha1", "sha2": "sha2", "sha224": "sha224",
    "sha256": "sha256", "sha384": "sha384", "sha512": "sha512", "to_base64": "to_base64",
    "from_base64": "from_base64", "json_value": "json_value", "json_query": "json_query",
    "json_exists": "json_exists", "trunc": "truncate", "truncate": "truncate",
    "locate": "locate",
    **{name: name for name in ("sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2",
                               "sinh", "cosh", "tanh", "degrees", "radians")},
}

AGGREGATES: dict[str, str] = {
    "count": "count", "sum": "sum", "avg": "avg", "mean": "avg", "min": "min", "max": "max",
    "stddev": "stddev_samp", "stddev_samp": "stddev_samp", "stddev_pop": "stddev_pop",
    "variance": "var_samp", "var_samp": "var_samp", "var_pop": "var_pop",
    "bool_and": "bool_and", "every": "bool_and", "bool_or": "bool_or",
    "any_value": "any_value", "first_value_agg": "any_value",
}

WINDOW_ONLY: dict[str, str] = {
    "row_number": "row_number", "rank": "rank", "dense_rank": "dense_rank",
    "percent_rank": "percent_rank", "cume_dist": "cume_dist", "ntile": "ntile",
    "lag": "lag", "lead": "lead", "first_value": "first_value", "last_value": "last_value",
    "nth_value": "nth_value",
}


def aggregate_type(name: str, args: list[pa.DataType]) -> pa.DataType | None:
    """Result type of an aggregate over arguments of the given types (DuckDB's rules)."""
    if name in ("count", "count_star"):
        return T.INT64
    arg = args[0] if args else T.NULL
    if name == "sum":
        return T.sum_type(arg) if T.is_numeric(arg) or T.is_null(arg) else None
    if name in ("avg", "stddev_samp", "stddev_pop", "var_samp", "var_pop"):
        return T.FLOAT64 if T.is_numeric(arg) or T.is_null(arg) else None
    if name in ("min", "max", "any_value"):
        return arg
    if name in ("bool_and", "bool_or"):
        return T.BOOL if pa.types.is_boolean(arg) or T.is_null(arg) else None
    return None


def window_type(name: str, args: list[pa.DataType]) -> pa.DataType | None:
    if name in ("row_number", "rank", "dense_rank", "ntile"):
        return T.INT64
    if name in ("percent_rank", "cume_dist"):
        return T.FLOAT64
    if name in ("lag", "lead", "first_value", "last_value", "nth_value"):
        return args[0] if args else None
    return aggregate_type(name, args)
