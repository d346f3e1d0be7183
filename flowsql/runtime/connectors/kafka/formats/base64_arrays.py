"""Base64 over whole Arrow arrays (Flink's json and csv formats carry BYTES as base64).

Arrow has no base64 kernel, and one Python call per value is what the formats avoid, so
both directions work on the arrays' value buffers with numpy. Decoding relies on padded
base64 (RFC 4648 with '='): every value is a whole number of 4-character groups, so the
concatenated characters of all values are groups too and decode in one pass; the padding
bytes are then cut out of each value's end. Unpadded text, other characters, or '=' inside
a value are errors, as in Java's basic decoder.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)
_INVALID = 255
_SEXTETS = np.full(256, _INVALID, dtype=np.uint8)
_SEXTETS[_ALPHABET] = np.arange(64, dtype=np.uint8)
_PAD = ord("=")


def _offsets_and_data(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Value offsets (rebased to 0) and the bytes they index; nulls are empty values."""
    values = pc.fill_null(values.cast(pa.binary()), b"")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    buffers = values.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[
        values.offset:values.offset + len(values) + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else \
        np.zeros(0, np.uint8)
    return offsets - offsets[0], data[offsets[0]:offsets[-1]]


def _array(kind: pa.DataType, offsets: np.ndarray, data: np.ndarray,
           like: pa.Array) -> pa.Array:
    out = pa.Array.from_buffers(kind, len(offsets) - 1,
                                [None, pa.py_buffer(offsets.astype(np.int32)),
                                 pa.py_buffer(data)])
    if like.null_count:
        out = pc.if_else(pc.is_valid(like), out, pa.scalar(None, kind))
    return out


def base64_decode(values: pa.Array) -> pa.Array:
    """Binary values from their base64 text (string or binary); ValueError if invalid."""
    offsets, chars = _offsets_and_data(values)
    lengths = np.diff(offsets)
    if (lengths % 4).any():
        raise ValueError("base64 text must come in groups of 4 characters")
    padding = chars == _PAD
    ends = offsets[1:][lengths > 0]
    last = padding[ends - 1]
    second = padding[ends - 2] & last
    pads = np.zeros(len(lengths), dtype=np.int64)
    pads[lengths > 0] = last.astype(np.int64) + second
    if int(padding.sum()) != int(pads.sum()):
        raise ValueError("'=' may only pad the end of base64 text")
    sextets = _SEXTETS[chars]
    sextets[padding] = 0
    if (sextets == _INVALID).any():
        raise ValueError("not a base64 character")
    groups = sextets.reshape(-1, 4).astype(np.uint32)
    word = (groups[:, 0] << 18) | (groups[:, 1] << 12) | (groups[:, 2] << 6) | groups[:, 3]
    decoded = np.stack([word >> 16, word >> 8, word], axis=1).astype(np.uint8).reshape(-1)
    if pads.any():
        out_ends = offsets[1:] // 4 * 3
        cut = np.concatenate([out_ends[pads >= 1] - 1, out_ends[pads == 2] - 2])
        keep = np.ones(len(decoded), dtype=bool)
        keep[cut] = False
        decoded = decoded[keep]
    out_offsets = np.concatenate([[0], np.cumsum(lengths // 4 * 3 - pads)])
    return _array(pa.binary(), out_offsets, decoded, values)


def base64_encode(values: pa.Array) -> pa.Array:
    """The padded base64 text (string) of binary values; NULL stays NULL."""
    offsets, data = _offsets_and_data(values)
    lengths = np.diff(offsets)
    padded = (lengths + 2) // 3 * 3
    padded_offsets = np.concatenate([[0], np.cumsum(padded)])
    groups = np.zeros(int(padded_offsets[-1]), dtype=np.uint8)
    groups[np.repeat(padded_offsets[:-1] - offsets[:-1], lengths)
           + np.arange(len(data))] = data
    triples = groups.reshape(-1, 3).astype(np.uint32)
    word = (triples[:, 0] << 16) | (triples[:, 1] << 8) | triples[:, 2]
    sextets = np.stack([word >> 18, word >> 12, word >> 6, word], axis=1) & 63
    text = _ALPHABET[sextets].reshape(-1)
    out_offsets = padded_offsets // 3 * 4
    pads = padded - lengths
    ends = out_offsets[1:]
    text[np.concatenate([ends[pads >= 1] - 1, ends[pads == 2] - 2])] = _PAD
    return _array(pa.string(), out_offsets, text, values)
