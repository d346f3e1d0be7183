"""Keyed partitioning: key -> stable 64-bit hash -> key group -> subtask.

Contract (what checkpoints and cross-process shuffles rely on):

* ``hash_columns`` is a pure function of the key *values*: identical in every process, run,
  Python version and machine (little- or big-endian hosts alike, since values are read as
  little-endian words). It never uses Python's ``hash()``, which is salted per process.
* Values that compare equal across the types a planner may leave on the two sides of a
  shuffle hash equal: every integer width (signed or unsigned), booleans and the integer
  representation of temporal types hash as int64; float32 and float64 hash as float64, with
  ``-0.0`` and every NaN normalized; ``string``, ``large_string``, ``string_view`` and the
  binary types hash their bytes; dictionary arrays hash their values. Decimals hash their
  unscaled integer, so equal values with *different* scales do not hash equal: the planner
  casts both sides to one type first. NULL hashes to a fixed constant.
* A column hashes as its engine storage form (``planner.types.normalize_storage_type``):
  a dictionary, large or view string, large binary or nanosecond timestamp lands in the key
  group of the same values cast to string, binary or microsecond timestamp, so no cast an
  operator makes to the engine's types can move a key to another key group.
* A key group is ``hash % max_parallelism``; the subtask that owns key group ``kg`` is
  ``kg * parallelism // max_parallelism``. Keyed state is stored per key group, so rescaling
  only reassigns contiguous key-group ranges (``key_group_range``) and never rehashes rows.

``key_groups`` is the one definition of a row's key group. The exchange routes by it
(``split_batch_by_subtask`` over the key expressions evaluated in their declared types) and
every keyed operator files state and timers by it (``KeyedTableState.key_groups_of`` over
the same expressions, or ``key_groups_of_hashes`` over hashes it keeps anyway); a rescaled
restore is only correct because the two agree, which
``tests/runtime/state/test_key_group_routing.py`` checks for every keyed operator.

Everything here is vectorized with numpy over Arrow buffers: no per-row Python. The mixing
function is the murmur3 64-bit finalizer (``fmix64``); strings are hashed 8 bytes at a time,
each word mixed with its position, which keeps the hash order-sensitive.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import setting
from flowsql.planner.types import normalize_storage_type as storage_type

#: default number of key groups, the upper bound on any operator's parallelism
#: key groups when ``max_parallelism`` is not set (its declared default)
DEFAULT_MAX_PARALLELISM = int(str(setting("max_parallelism").default))

_U64 = np.uint64
_C1 = _U64(0xFF51AFD7ED558CCD)
_C2 = _U64(0xC4CEB9FE1A85EC53)
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_SEED_INT = _U64(0x2545F4914F6CDD1D)
_SEED_STR = _U64(0x7F4A7C159E3779B9)
_SEED_RAW = _U64(0x94D049BB133111EB)
#: the hash every NULL gets, whatever its type
NULL_HASH = _U64(0x6A09E667F3BCC909)

_LE_U64 = np.dtype("<u8")


def fmix64(values: np.ndarray) -> np.ndarray:
    """The murmur3 finalizer over a uint64 array (wrapping arithmetic, a new array)."""
    k = values.astype(_U64, copy=True)
    k ^= k >> _U64(33)
    k *= _C1
    k ^= k >> _U64(33)
    k *= _C2
    k ^= k >> _U64(33)
    return k


def hash_array(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Stable uint64 hash of every value of ``array`` (see the module contract)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if len(array) == 0:
        return np.empty(0, dtype=_U64)
    hashes = _hash_values(array)
    if array.null_count:
        nulls = array.is_null().to_numpy(zero_copy_only=False)
        hashes = np.where(nulls, NULL_HASH, hashes)
    return hashes


def hash_columns(columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """Stable uint64 hash of multi-column keys; order-sensitive: (a, b) differs from (b, a)."""
    if not columns:
        raise ExecutionError("a keyed partitioning needs at least one key column")
    combined = hash_array(columns[0])
    for column in columns[1:]:
        combined = fmix64(combined * _GOLDEN + hash_array(column))
    return combined


def key_groups(columns: Sequence[pa.Array | pa.ChunkedArray], max_parallelism: int) -> np.ndarray:
    """Key group in ``[0, max_parallelism)`` of every row, as int64: the key group the
    exchange routes the row by and its keyed state is filed under."""
    return key_groups_of_hashes(hash_columns(columns), max_parallelism)


def key_groups_of_hashes(hashes: np.ndarray, max_parallelism: int) -> np.ndarray:
    """The key groups of keys whose ``hash_columns`` are ``hashes`` (int64), for an owner
    that keeps the hashes of its keys."""
    _check_max_parallelism(max_parallelism)
    return (np.asarray(hashes, _U64) % _U64(max_parallelism)).astype(np.int64)


def subtask_for_key_group(key_group: int | np.ndarray, parallelism: int,
                          max_parallelism: int) -> int | np.ndarray:
    """The subtask owning ``key_group``; works on scalars and int64 arrays alike."""
    _check_parallelism(parallelism, max_parallelism)
    return key_group * parallelism // max_parallelism


def key_group_range(subtask: int, parallelism: int, max_parallelism: int) -> range:
    """The contiguous key groups ``subtask`` owns: the exact inverse of
    ``subtask_for_key_group``, which is what a rescaled restore reads state by."""
    _check_parallelism(parallelism, max_parallelism)
    if not 0 <= subtask < parallelism:
        raise ExecutionError(f"subtask {subtask} is out of range for parallelism {parallelism}")
    start = (subtask * max_parallelism + parallelism - 1) // parallelism
    end = ((subtask + 1) * max_parallelism + parallelism - 1) // parallelism
    return range(start, end)


def split_batch_by_subtask(batch: pa.RecordBatch, key_indices: Sequence[int], parallelism: int,
                           max_parallelism: int) -> list[pa.RecordBatch]:
    """One batch per subtask (possibly empty), rows in their original relative order.

    One stable argsort and one ``take`` reorder the batch; the per-subtask batches are
    zero-copy slices of the result. Keeping the relative order matters: a channel is FIFO
    per key, and updates to one key must not overtake each other.
    """
    _check_parallelism(parallelism, max_parallelism)
    if parallelism == 1:
        return [batch]
    groups = key_groups([batch.column(i) for i in key_indices], max_parallelism)
    subtasks = groups * parallelism // max_parallelism
    order = np.argsort(subtasks, kind="stable")
    counts = np.bincount(subtasks, minlength=parallelism)
    reordered = batch.take(pa.array(order))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return [reordered.slice(int(start), int(count)) for start, count in zip(starts, counts)]


def _check_max_parallelism(max_parallelism: int) -> None:
    if not 1 <= max_parallelism <= 2**15:
        raise ExecutionError(f"max parallelism must be in [1, 32768], got {max_parallelism}")


def _check_parallelism(parallelism: int, max_parallelism: int) -> None:
    _check_max_parallelism(max_parallelism)
    if not 1 <= parallelism <= max_parallelism:
        raise ExecutionError(f"parallelism {parallelism} must be in [1, max parallelism "
                             f"{max_parallelism}]")


def _hash_values(array: pa.Array) -> np.ndarray:
    """Hash of every slot, ignoring validity (null slots are overwritten by the caller)."""
    t = array.type
    if pa.types.is_dictionary(t):
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        dictionary_hashes = hash_array(array.dictionary)
        return dictionary_hashes[indices] if len(dictionary_hashes) else np.zeros(len(array), _U64)
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return _hash_int64(pc.cast(array, pa.int64(), safe=False))
    if pa.types.is_timestamp(t) and not storage_type(t).equals(t):
        return _hash_values(pc.cast(array, storage_type(t), safe=False))
    if pa.types.is_temporal(t) and t.bit_width in (32, 64) and not pa.types.is_interval(t):
        return _hash_int64(array.view(pa.int32() if t.bit_width == 32 else pa.int64()))
    if pa.types.is_floating(t):
        return _hash_float(array)
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
        return _hash_bytes(pc.cast(array, pa.large_string()))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return _hash_bytes(pc.cast(array, pa.large_binary()))
    if pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t) or pa.types.is_interval(t):
        return _hash_fixed_width(array)
    if pa.types.is_null(t):
        return np.full(len(array), NULL_HASH, dtype=_U64)
    raise ExecutionError(f"cannot partition by a key of type {t}")


def _hash_int64(array: pa.Array) -> np.ndarray:
    values = pc.cast(array, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    return fmix64(values.view(_U64) ^ _SEED_INT)


def _hash_float(array: pa.Array) -> np.ndarray:
    values = pc.cast(array, pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    values = np.where(values == 0.0, 0.0, values)  # -0.0 == 0.0
    values = np.where(np.isnan(values), np.nan, values)  # one NaN bit pattern
    return fmix64(values.astype("<f8").view(_LE_U64).astype(_U64) ^ _SEED_INT)


def _hash_fixed_width(array: pa.Array) -> np.ndarray:
    """Decimals, fixed-size binary and intervals: fold the raw little-endian words of each value."""
    width = array.type.byte_width
    raw = np.frombuffer(array.buffers()[1], dtype=np.uint8,
                        count=(array.offset + len(array)) * width)[array.offset * width:]
    padded_width = -(-width // 8) * 8
    matrix = np.zeros((len(array), padded_width), dtype=np.uint8)
    matrix[:, :width] = raw.reshape(len(array), width)
    words = matrix.view(_LE_U64).astype(_U64)
    combined = np.full(len(array), _SEED_RAW, dtype=_U64)
    for column in range(words.shape[1]):  # a fixed 1-4 words per value, not per row
        combined = fmix64(combined * _GOLDEN + words[:, column])
    return combined


def _hash_bytes(array: pa.Array) -> np.ndarray:
    """Variable-length bytes (a large_string / large_binary array), vectorized per word.

    Word ``i`` of a value is the 8 bytes starting at byte ``8 * i`` (read unaligned from the
    data buffer, bytes past the value's end masked to zero) and contributes
    ``fmix64(word ^ fmix64(i))``; contributions are summed per value with a wrapping prefix
    sum and the sum is finalized together with the byte length, so the zero padding never
    makes two different values collide.
    """
    n = len(array)
    offsets = np.frombuffer(array.buffers()[1], dtype="<i8", count=array.offset + n + 1)
    offsets = offsets[array.offset:].astype(np.int64)
    lengths = np.diff(offsets)
    total = int(offsets[-1] - offsets[0])
    data = np.zeros(total + 8, dtype=np.uint8)  # 8 spare bytes: the last word may overrun
    if total:
        data[:total] = np.frombuffer(array.buffers()[2], dtype=np.uint8,
                                     count=int(offsets[-1]))[offsets[0]:]
    window = np.ndarray(shape=(total + 1,), dtype=_LE_U64, buffer=data, strides=(1,))
    word_counts = (lengths + 7) // 8
    word_starts = np.concatenate(([0], np.cumsum(word_counts)))
    positions = (np.arange(int(word_starts[-1]), dtype=np.int64)
                 - np.repeat(word_starts[:-1], word_counts))
    byte_starts = np.repeat(offsets[:-1] - offsets[0], word_counts) + 8 * positions
    remaining = np.repeat(lengths, word_counts) - 8 * positions
    shift = (8 * np.minimum(remaining, 7)).astype(_U64)
    masks = np.where(remaining >= 8, _U64(0xFFFFFFFFFFFFFFFF), (_U64(1) << shift) - _U64(1))
    words = window[byte_starts].astype(_U64) & masks
    contributions = fmix64(words ^ fmix64(positions.astype(_U64) + _SEED_STR))
    prefix = np.concatenate((np.zeros(1, dtype=_U64), np.cumsum(contributions, dtype=_U64)))
    sums = prefix[word_starts[1:]] - prefix[word_starts[:-1]]
    return fmix64(sums ^ fmix64(lengths.astype(_U64) ^ _SEED_STR))
