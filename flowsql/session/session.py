"""Sessions wire the layers together: sql -> optimizer -> runtime (or spark).

``flowsql.connect(**settings)`` returns a :class:`Session`; ``Session.sql(text)`` runs one
statement and returns a :class:`Result`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from flowsql.errors import FlowSQLError
from flowsql.planner.catalog import Catalog
from flowsql.planner.config.settings import validate_setting

DEFAULT_SETTINGS: dict[str, str] = {
    "engine": "local",
    "execution.memory-budget": "8gb",
    "execution.batch-size": "65536",
    "parallelism.default": "1",
    "max_parallelism": "128",
    "optimizer.broadcast-threshold-rows": "100000",
    "execution.buffer-timeout": "100",
    "execution.buffer-size": "1mb",
    "execution.buffer-rows": "65536",
    "execution.channel-credits": "4",
    "execution.runtime-mode": "batch",
    "pipeline.auto-watermark-interval": "200",
}

@dataclass
class Result:
    """The outcome of one statement.

    ``kind`` is one of: query, explain, ddl, show, describe, set, job. Queries, SHOW,
    DESCRIBE and EXPLAIN carry a table; DDL and SET carry a message; ``INSERT INTO``
    carries the running ``job``. A query in streaming mode carries its ``changelog`` instead
    of a table: it runs when ``stream()`` or ``to_arrow()`` reads it.
    """

    kind: str
    table: pa.Table | None = None
    message: str | None = None
    plan_text: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    changelog: Any = None
    job: Any = None

    def to_arrow(self) -> pa.Table:
        """The result rows; in streaming mode, the final rows of the changelog (an error
        for an unbounded input, which has no final rows)."""
        if self.table is None and self.changelog is not None:
            self.table = self.changelog.final()
        if self.table is None:
            return pa.table({})
        return self.table

    def stream(self) -> Iterator[pa.RecordBatch]:
        """The changes of a streaming query as they happen: batches whose first column
        ``op`` is the row kind (``+I``, ``-U``, ``+U``, ``-D``). Closing the iterator stops
        the query. In batch mode, the result rows, all ``+I``."""
        if self.changelog is not None:
            return iter(self.changelog)
        if self.kind != "query" or self.table is None:
            raise FlowSQLError(f"a {self.kind} statement has no stream of changes")
        return _inserts(self.table)

    def to_pandas(self) -> Any:
        return self.to_arrow().to_pandas()

    def explain(self) -> str:
        """The logical and physical plan that produced this result."""
        if self.plan_text is None:
            raise FlowSQLError(f"a {self.kind} statement has no plan")
        return self.plan_text

    def show(self, max_rows: int = 40) -> None:
        from flowsql.render import render_result

        print(render_result(self, max_rows=max_rows))

    def __repr__(self) -> str:
        if self.table is not None:
            return f"Result({self.kind}, {self.table.num_rows} rows)"
        return f"Result({self.kind}, {self.message!r})"


def _inserts(table: pa.Table) -> Iterator[pa.RecordBatch]:
    for batch in table.to_batches():
        ops = pa.array(["+I"] * batch.num_rows, pa.string())
        yield pa.RecordBatch.from_arrays([ops, *batch.columns],
                                         names=["op", *batch.schema.names])


class Session:
    """A catalog, settings, and the machinery to run statements against them."""

    def __init__(self, **settings: Any) -> None:
        self.settings: dict[str, str] = dict(DEFAULT_SETTINGS)
        self.catalog = Catalog()
        #: the parallel runner (and its worker processes), started by the first query that
        #: runs with parallelism > 1 and stopped by ``close``
        self.parallel_runner: Any = None
        #: jobs submitted by INSERT INTO; cancelled by ``close``
        self.jobs: list[Any] = []
        for key, value in settings.items():
            self.set(key, str(value))

    def set(self, key: str, value: str) -> None:
        """Change a setting (``SET 'key' = 'value'``): an alias is stored under its
        canonical key; an unknown key or an invalid value is a ConfigError (see
        ``flowsql.planner.config.settings``)."""
        canonical, stored = validate_setting(key, value)
        self.settings[canonical] = stored

    def sql(self, text: str) -> Result:
        """Run exactly one statement."""
        from flowsql.session.execute import execute_statement, parse_one_statement

        return execute_statement(self, parse_one_statement(text), text)


    def run_script(self, text: str) -> Iterator[Result]:
        """Run ``;``-separated statements in order, yielding each result as it completes."""
        from flowsql.session.execute import execute_statement, parse_statements

        for statement in parse_statements(text):
            yield execute_statement(self, statement, text)

    def close(self) -> None:
        """Release what the session started: running jobs (cancelled) and the worker
        processes of the parallel runner."""
        for job in self.jobs:
            job.cancel()
        for job in self.jobs:
            job.join(5.0)
        self.jobs.clear()
        if self.parallel_runner is not None:
            self.parallel_runner.close()
            self.parallel_runner = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(**settings: Any) -> Session:
    """Open a session. ``engine`` is ``local`` (default) or ``spark``; any other
    keyword is a setting or one of its aliases (``memory_budget`` ->
    ``execution.memory-budget``, ``parallelism`` -> ``parallelism.default``)."""
    return Session(**settings)
