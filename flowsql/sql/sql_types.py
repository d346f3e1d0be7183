"""SQL type syntax (sqlglot DataType) -> Arrow types."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from flowsql.errors import BindError
from flowsql.sql.positions import node_position

_D = exp.DataType.Type
_SIMPLE: dict[object, pa.DataType] = {
    _D.BOOLEAN: pa.bool_(),
    _D.TINYINT: pa.int8(), _D.SMALLINT: pa.int16(), _D.INT: pa.int32(),
    _D.BIGINT: pa.int64(), _D.FLOAT: pa.float32(), _D.DOUBLE: pa.float64(),
    _D.VARCHAR: pa.string(), _D.CHAR: pa.string(), _D.TEXT: pa.string(),
    _D.NVARCHAR: pa.string(), _D.NCHAR: pa.string(),
    _D.DATE: pa.date32(), _D.BINARY: pa.binary(), _D.VARBINARY: pa.binary(),
    _D.TIME: pa.time64("us"), _D.INTERVAL: pa.month_day_nano_interval(),
}
_UNITS = {0: "s", 1: "ms", 2: "ms", 3: "ms", 4: "us", 5: "us", 6: "us", 7: "ns", 8: "ns", 9: "ns"}


def _params(dt: exp.DataType) -> list[int]:
    out = []
    for p in dt.expressions:
        value = p.this if isinstance(p, exp.DataTypeParam) else p
        out.append(int(str(value.name if isinstance(value, exp.Expression) else value)))
    return out


def to_arrow_type(dt: exp.DataType, sql: str | None = None) -> pa.DataType:
    """Map a parsed SQL type to its Arrow type; BindError for types we do not support."""
    kind = dt.this
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind in (_D.DECIMAL, _D.BIGDECIMAL) or kind.name in ("NUMERIC", "DECIMAL"):
        params = _params(dt)
        precision = params[0] if params else 18
        scale = params[1] if len(params) > 1 else (0 if params else 3)
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            line, col = node_position(dt)
            raise BindError(f"invalid DECIMAL({precision}, {scale})", line, col, sql)
        return pa.decimal128(precision, scale)
    if kind in (_D.TIMESTAMP, _D.DATETIME, _D.TIMESTAMPNTZ):
        params = _params(dt)
        return pa.timestamp(_UNITS.get(params[0] if params else 6, "us"))
    if kind == _D.MAP and len(dt.expressions) == 2:
        key, value = (to_arrow_type(e, sql) for e in dt.expressions)
        return pa.map_(key, value)
    if kind in (_D.TIMESTAMPTZ, _D.TIMESTAMPLTZ):
        params = _params(dt)
        return pa.timestamp(_UNITS.get(params[0] if params else 6, "us"), tz="UTC")
    line, col = node_position(dt)
    raise BindError(f"unsupported type {dt.sql()}", line, col, sql)
