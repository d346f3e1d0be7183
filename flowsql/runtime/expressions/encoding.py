"""Hashes (MD5, SHA1, SHA2 and the SHA-224..512 spellings) as lower-case hex strings, and
TO_BASE64 / FROM_BASE64, over the UTF-8 bytes of strings.

pyarrow has no kernels for these, so each distinct value of a batch is encoded once in
Python (hashlib, base64): a loop over distinct values, off the hot path of the relational
operators. FROM_BASE64 of text that is not Base64, or not UTF-8 once decoded, is an error
naming the value. SHA2's bit length must be 224, 256, 384 or 512 (else NULL, as Flink).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array, per_distinct


def map_distinct(values: pa.Array, fn: Callable[[str], str | None]) -> pa.Array:
    """``fn`` applied once per distinct non-NULL value, the results spread back to rows."""
    distinct = pc.unique(values)
    results = pa.array([None if v is None else fn(v) for v in distinct.to_pylist()],
                       pa.string())
    return pc.take(results, pc.index_in(values, value_set=distinct))


def _hex_digest(algorithm: str) -> Callable[[str], str]:
    return lambda text: hashlib.new(algorithm, text.encode("utf-8")).hexdigest()


def _unary(name: str, fn: Callable[[str], str | None]) -> None:
    @register(name)
    def build(call: Call, args: list[Node]) -> Run:
        run = args[0].run
        return lambda batch: map_distinct(as_array(run(batch), batch.num_rows), fn)


for _name, _algorithm in (("md5", "md5"), ("sha1", "sha1"), ("sha224", "sha224"),
                          ("sha256", "sha256"), ("sha384", "sha384"), ("sha512", "sha512")):
    _unary(_name, _hex_digest(_algorithm))


@register("sha2")
def _sha2(call: Call, args: list[Node]) -> Run:
    value, bits = args

    def digest(values: Datum, length: int) -> Datum:
        if length not in (224, 256, 384, 512):
            return pa.nulls(len(values), pa.string())
        return map_distinct(values, _hex_digest(f"sha{length}"))

    def run(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        return per_distinct(as_array(value.run(batch), n), bits.run(batch), n,
                            lambda v, b: digest(v, int(b)), pa.string())
    return run


def _from_base64(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ExecutionError(f"FROM_BASE64: '{text}' is not Base64 of UTF-8 text") from None


_unary("to_base64", lambda text: base64.b64encode(text.encode("utf-8")).decode("ascii"))
_unary("from_base64", _from_base64)
