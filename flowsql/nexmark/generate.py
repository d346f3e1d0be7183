"""``flowsql nexmark gen``: the events of a generator configuration as Parquet files, one
directory per table (``DIR/person``, ``DIR/auction``, ``DIR/bid``), so another engine can
read exactly the events the ``nexmark`` connector generates (same seed and options: same
rows, in event-number order)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from flowsql.nexmark.generator import KINDS, SCHEMAS, GeneratorConfig, NexmarkGenerator

#: event numbers generated per step (bounds the memory a large run needs)
CHUNK_EVENTS = 1_000_000


def generate_files(config: GeneratorConfig, out: str | Path) -> dict[str, int]:
    """Write ``config``'s events (``config.events`` must be set) under ``out``; returns
    the rows written per table."""
    if config.events is None:
        raise ValueError("generate_files needs a bounded event count")
    generator = NexmarkGenerator(config)
    rows: dict[str, int] = {}
    for kind in KINDS:
        directory = Path(out) / kind
        directory.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(directory / "part-0.parquet", SCHEMAS[kind]) as writer:
            rows[kind] = 0
            for start in range(0, config.events, CHUNK_EVENTS):
                batch = generator.generate(kind, start, min(start + CHUNK_EVENTS,
                                                            config.events))
                writer.write_batch(batch)
                rows[kind] += batch.num_rows
    return rows
