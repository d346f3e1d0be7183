"""The decoding contract of a payload format, and the search for the bad payloads.

Text formats parse a whole poll's payloads at once (one Arrow read over all of them). A
format's block parser takes a block of payloads and returns their rows, or raises when
any one of them is bad. Badness must belong to a single payload -- a block parses exactly
when each of its payloads does -- which holds because every read is done against an
explicit schema, row by row. So the fast path is one parse of everything, and only when
it fails is the poll split into blocks that are parsed on their own, a failing block
split further until its bad payloads stand alone. "Bad" thereby means exactly what the
fast path rejects, and every good payload decodes to the rows the fast path would have
given it (the filesystem connector's tolerant reading works the same way). A parser may
also refuse a block it cannot vouch for although each payload is good (CSV values with
line breaks and an escape character): that costs time, never rows.

A payload can also parse and still be unusable (a JSON object missing a key under
``fail-on-missing-field``, a Debezium event with an unknown ``op``): the parser reports
those as *rejected*, without rows, and the driver treats them like payloads that did not
parse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

from flowsql.errors import DataError, ExecutionError


@dataclass(frozen=True)
class Decoded:
    """The rows decoded from a sequence of payloads."""

    #: exactly the columns (names, types) of the schema the format was made for
    batch: pa.RecordBatch
    #: int64, one per row: the index of the payload the row came from (ascending)
    messages: np.ndarray
    #: int8 row kinds (``flowsql.runtime.changelog``), one per row, for changelog formats
    kinds: np.ndarray | None
    #: payloads dropped because they did not parse and the format ignores parse errors
    skipped: int


class PayloadFormat(Protocol):
    """A Kafka message format: payload bytes <-> rows of one schema.

    ``decode`` yields rows in payload order; a ``None`` payload (a tombstone) yields no
    row except in ``raw``, where it is a NULL value. A bad payload raises
    :class:`DataError` whose message starts with ``where(i)`` of that payload, unless
    the format ignores parse errors: then it is dropped and counted in ``skipped``.
    ``encode`` returns one payload per row, in row order.
    """

    #: whether decode yields row kinds (``Decoded.kinds``): debezium-json
    changelog: bool

    def decode(self, payloads: Sequence[bytes | None], where: Callable[[int], str]
               ) -> Decoded: ...

    def encode(self, batch: pa.RecordBatch) -> list[bytes | None]: ...


class BadBlock(ValueError):
    """Raised by a block parser when the rows it read do not match its payloads one to
    one (a payload held no record or several)."""


#: what a block parser raises for a block holding a bad payload
PARSE_FAILURES = (pa.ArrowException, ValueError, ExecutionError)


@dataclass(frozen=True)
class Rows:
    """What a block of payloads decoded to."""

    batch: pa.RecordBatch
    #: per row: the index of its payload within the block
    messages: np.ndarray
    kinds: np.ndarray | None
    #: per payload of the block: parsed, but unusable (it has no rows)
    rejected: np.ndarray


class BlockParser(Protocol):
    #: the format's name, as error messages show it
    label: str
    schema: pa.Schema

    def parse(self, payloads: list[bytes]) -> Rows:
        """The rows of ``payloads``; raises one of ``PARSE_FAILURES`` if any is bad."""
        ...

    def suspects(self, payloads: list[bytes]) -> np.ndarray:
        """A cheap guess (bool per payload) of which payloads ``parse`` would refuse,
        made only when a block failed: it decides how the block is split, never whether
        a payload is bad."""
        ...

    def problem(self, payload: bytes) -> str | None:
        """What is wrong with one bad payload, in a user's words (the error path only);
        None when it cannot say more than the parser's own error."""
        ...


#: payloads per block parsed on their own once a whole poll failed: bounds the re-parsing
#: a bad payload costs to about twice this many payloads
BLOCK_PAYLOADS = 1024


@dataclass(frozen=True)
class _Block:
    """Payloads to parse together: positions into the present payloads, ascending."""

    positions: np.ndarray
    #: the parser's guess has already split this block
    screened: bool = False


def decode_payloads(payloads: Sequence[bytes | None], where: Callable[[int], str],
                    parser: BlockParser, ignore_errors: bool, skip_empty: bool = False,
                    changelog: bool = False) -> Decoded:
    """Decode ``payloads`` with ``parser`` (see the module docstring). ``None`` payloads,
    and with ``skip_empty`` also empty ones, yield no rows and are not bad.

    Failing blocks are split and parsed again, leftmost first, so without
    ``ignore_errors`` the first bad payload found is the first bad payload. With it, a
    failing block of at most ``BLOCK_PAYLOADS`` is first split by the parser's cheap
    guess (``suspects``) into the unsuspected payloads, parsed together, and each suspect
    alone: a payload costs one parse, not a bisection, when bad ones are many. A wrong
    guess costs only time: every payload still stands or falls by the parser's verdict.
    """
    present, index = _present(payloads, skip_empty)
    pieces: list[tuple[np.ndarray, Rows]] = []
    skipped = 0
    pending = [_Block(np.arange(len(present)))] if present else []
    while pending:
        block = pending.pop()
        positions = block.positions
        chosen = _take(present, positions)
        try:
            rows = parser.parse(chosen)
        except PARSE_FAILURES as error:
            if len(positions) == 1:
                if not ignore_errors:
                    raise _bad(payloads, index, int(positions[0]), where, parser,
                               error) from None
                skipped += 1
            else:
                parts = _split(block, chosen, parser if ignore_errors else None)
                pending.extend(reversed(parts))  # popped from the left
            continue
        rejected = np.flatnonzero(rows.rejected)
        if rejected.size:
            if not ignore_errors:
                raise _bad(payloads, index, int(positions[rejected[0]]), where, parser,
                           None) from None
            skipped += int(rejected.size)
        pieces.append((positions, rows))
    return _assemble(pieces, index, parser.schema, changelog, skipped)


def _take(present: list[bytes], positions: np.ndarray) -> list[bytes]:
    first, last = int(positions[0]), int(positions[-1])
    if last - first + 1 == len(positions):
        return present[first:last + 1]
    return [present[i] for i in positions.tolist()]


def _split(block: _Block, chosen: list[bytes], guesser: BlockParser | None) -> list[_Block]:
    positions = block.positions
    if len(positions) > BLOCK_PAYLOADS:
        return [_Block(positions[start:start + BLOCK_PAYLOADS])
                for start in range(0, len(positions), BLOCK_PAYLOADS)]
    if guesser is not None and not block.screened:
        suspected = guesser.suspects(chosen)
        if 0 < int(suspected.sum()) < len(positions):
            return [_Block(positions[~suspected], screened=True),
                    *(_Block(positions[i:i + 1]) for i in np.flatnonzero(suspected))]
    middle = len(positions) // 2
    return [_Block(positions[:middle], block.screened),
            _Block(positions[middle:], block.screened)]


def _present(payloads: Sequence[bytes | None], skip_empty: bool
             ) -> tuple[list[bytes], np.ndarray | None]:
    """The payloads that carry a record, and (when some do not) their positions."""
    present = [p for p in payloads if p] if skip_empty else \
        [p for p in payloads if p is not None]
    if len(present) == len(payloads):
        return present, None
    index = np.fromiter((i for i, p in enumerate(payloads)
                         if (p if skip_empty else p is not None)), dtype=np.int64,
                        count=len(present))
    return present, index


def _bad(payloads: Sequence[bytes | None], index: np.ndarray | None, position: int,
         where: Callable[[int], str], parser: BlockParser,
         error: BaseException | None) -> DataError:
    message = position if index is None else int(index[position])
    payload = payloads[message]
    assert payload is not None
    problem = parser.problem(payload)
    if problem is None:
        problem = f"cannot parse the message ({error})" if error is not None else \
            "cannot parse the message"
    return DataError(f"{where(message)}: {parser.label}: {problem}")


def _assemble(pieces: list[tuple[np.ndarray, Rows]], index: np.ndarray | None,
              schema: pa.Schema, changelog: bool, skipped: int) -> Decoded:
    if not pieces:
        return Decoded(empty_batch(schema), np.zeros(0, np.int64),
                       np.zeros(0, np.int8) if changelog else None, skipped)
    batches = [rows.batch for _, rows in pieces]
    batch = batches[0] if len(batches) == 1 else pa.concat_batches(batches)
    messages = np.concatenate([positions[rows.messages] for positions, rows in pieces]
                              ).astype(np.int64)
    kinds = None
    if changelog:
        kinds = np.concatenate([rows.kinds for _, rows in pieces if rows.kinds is not None]
                               ).astype(np.int8)
    if len(pieces) > 1 and bool((np.diff(messages) < 0).any()):
        # screened blocks come back out of order; a payload's rows stay together and in
        # order (a stable sort), as an update's -U and +U must
        order = np.argsort(messages, kind="stable")
        batch = batch.take(pa.array(order))
        messages = messages[order]
        kinds = kinds[order] if kinds is not None else None
    if index is not None:
        messages = index[messages]
    return Decoded(batch, messages, kinds, skipped)


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def all_rows(rows: int) -> np.ndarray:
    """No payload rejected among ``rows``."""
    return np.zeros(rows, dtype=bool)
