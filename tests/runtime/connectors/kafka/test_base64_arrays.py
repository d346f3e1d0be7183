"""Vectorized base64 agrees with Python's for every length, slices and NULLs, and refuses
what Java's basic decoder refuses."""

from __future__ import annotations

import base64
import random

import pyarrow as pa
import pytest

from flowsql.runtime.connectors.kafka.formats.base64_arrays import base64_decode, base64_encode


def test_agrees_with_python() -> None:
    rng = random.Random(7)
    values = [None if rng.random() < 0.1 else rng.randbytes(rng.randrange(12))
              for _ in range(3000)]
    array = pa.array(values, pa.binary())
    text = base64_encode(array)
    assert text.type == pa.string()
    assert text.to_pylist() == [None if v is None else base64.b64encode(v).decode()
                                for v in values]
    assert base64_decode(text).to_pylist() == values
    assert base64_decode(text.slice(17, 500)).to_pylist() == values[17:517]
    assert base64_encode(array.slice(3, 40)).to_pylist() == text.to_pylist()[3:43]


def test_empty_arrays() -> None:
    assert base64_encode(pa.array([], pa.binary())).to_pylist() == []
    assert base64_decode(pa.array([None, ""], pa.string())).to_pylist() == [None, b""]


@pytest.mark.parametrize("bad", ["abc", "ab=c", "a===", "!!!!", "ab==cd==", "aGk=\n"])
def test_refuses_invalid_text(bad: str) -> None:
    with pytest.raises(ValueError):
        base64_decode(pa.array(["aGk=", bad]))
