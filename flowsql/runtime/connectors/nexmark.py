"""The ``nexmark`` connector's tables: one kind of Nexmark event, by event-number range.

A table declares (a subset of) its kind's columns, matched by name case-insensitively and
cast to the declared types (``flowsql.nexmark.generator.SCHEMAS`` lists them). Its rows are
addressed by *event number* (all kinds together), so the source deals event-number chunks
to its subtasks exactly as the ``datagen`` source deals row chunks: the same dealing, the
same snapshot of positions and the same exact restore, at any parallelism
(``DatagenSource``). A chunk holds only the events of the table's kind (a person table
gets 1 row per 50 event numbers).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from flowsql.errors import CatalogError, ConfigError
from flowsql.nexmark.generator import SCHEMAS, GeneratorConfig, NexmarkGenerator, event_numbers
from flowsql.planner.config.nexmark import NEXMARK


class NexmarkTable:
    """The validated options of one nexmark table over ``schema``. Offers what
    ``DatagenSource`` reads: ``rows(start, count)``, ``total_rows`` (event numbers, not
    rows: None when unbounded) and ``rows_per_second`` (0: unthrottled)."""

    rows_per_second = 0

    def __init__(self, schema: pa.Schema, options: dict[str, str]) -> None:
        self.schema = schema
        self.kind: str = _option(options, "table")
        self.config = config_of(options)
        self.total_rows: int | None = self.config.events
        self._generator = NexmarkGenerator(self.config)
        generated = SCHEMAS[self.kind]
        by_name = {name.lower(): i for i, name in enumerate(generated.names)}
        self._positions: list[int] = []
        for field in schema:
            position = by_name.get(field.name.lower())
            if position is None:
                raise CatalogError(f"nexmark {self.kind} table: no column '{field.name}' "
                                   f"(columns: {', '.join(generated.names)})")
            self._positions.append(position)

    @property
    def row_count(self) -> int | None:
        """Rows of the table (its kind's events among ``events.num``)."""
        if self.total_rows is None:
            return None
        return len(event_numbers(self.kind, 0, self.total_rows))

    def rows(self, start: int, count: int) -> pa.RecordBatch:
        """The table's rows among event numbers ``start .. start + count - 1``."""
        raw = self._generator.generate(self.kind, start, start + count)
        columns = [raw.column(p).cast(f.type) for p, f in zip(self._positions, self.schema,
                                                               strict=True)]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def config_of(options: dict[str, str]) -> GeneratorConfig:
    """The generator configuration a table's options describe."""
    return GeneratorConfig(
        events=_option(options, "events.num"),
        first_event_rate=_option(options, "first-event.rate"),
        next_event_rate=_option(options, "next-event.rate"),
        rate_period_s=max(2, _option(options, "rate.period") // 1000),
        base_time_ms=_option(options, "base-time"),
        hot_auction_ratio=_option(options, "hot-auctions.ratio"),
        hot_seller_ratio=_option(options, "hot-sellers.ratio"),
        hot_bidder_ratio=_option(options, "hot-bidders.ratio"),
        seed=_option(options, "seed"))


def _option(options: dict[str, str], key: str) -> Any:
    try:
        return NEXMARK.value(options, key)
    except ConfigError as error:
        raise CatalogError(f"nexmark: {error}") from None
