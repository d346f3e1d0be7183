"""The outcome of one statement: a table, a message, a changelog or a running job."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from flowsql.errors import FlowSQLError
from flowsql.render import render_result


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
    #: a streaming job started from a savepoint: the verdict for every state (operator,
    #: state, verdict -- restored, migrated, new, dropped --, rows, detail)
    restore_report: pa.Table | None = None
    #: EXPLAIN ANALYZE: one row per physical operator with its estimated and actual rows,
    #: q-error and own seconds (``planner.explain_analyze.ANALYSIS_SCHEMA``)
    analysis: pa.Table | None = None

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
