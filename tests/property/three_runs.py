"""One query, three runs: flowsql at a tiny memory budget, flowsql at an unlimited one, DuckDB.

:class:`ThreeRuns` registers the same Parquet files in two flowsql sessions and a DuckDB
connection; :meth:`ThreeRuns.problems` runs a query on all three and lists everything wrong:
a flowsql run that failed, a result that differs from DuckDB's, a spill file left behind.
Each flowsql session spills under its own ``io.tmp.dirs`` directory, which must be empty
after every query, whether it succeeded or failed.

The tiny budget is :data:`TINY_BUDGET` (1 MiB), overridden by the environment variable
``FLOWSQL_PROPERTY_TINY_BUDGET`` -- e.g. '16gb' checks the harness itself on an engine whose
operators do not spill yet.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa

import flowsql
from flowsql.session import Session
from tests.property.random_queries import RandomQuery
from tests.property.result_equivalence import differences

TINY_BUDGET = os.environ.get("FLOWSQL_PROPERTY_TINY_BUDGET", "1mb")
UNLIMITED_BUDGET = "16gb"


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


class ThreeRuns:
    """Two flowsql sessions (tiny and unlimited budget) and DuckDB over ``tables``."""

    def __init__(self, tables: dict[str, Path], spill_root: Path, parallelism: int) -> None:
        self.parallelism = parallelism
        self.oracle = duckdb.connect()
        self.oracle.execute("SET threads = 1")  # the machine is shared; the oracle is fast
        for name, path in tables.items():
            self.oracle.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({_quoted(path)})")
        self.runs: list[tuple[str, Session, Path]] = []
        for role, budget in (("tiny", TINY_BUDGET), ("unlimited", UNLIMITED_BUDGET)):
            spill = spill_root / f"spill-{role}"
            spill.mkdir(parents=True)
            self.runs.append((f"flowsql at budget {budget}, parallelism {parallelism}",
                              self._session(tables, budget, spill), spill))

    def _session(self, tables: dict[str, Path], budget: str, spill: Path) -> Session:
        settings = {"execution.memory-budget": budget, "io.tmp.dirs": str(spill),
                    "parallelism.default": str(self.parallelism)}
        if self.parallelism > 1:
            # the tables are small enough that the optimizer would keep the query on one
            # subtask, in the session process; the point here is the parallel path
            settings["optimizer.small-query-on-one-subtask"] = "false"
        session = flowsql.connect(**settings)
        for name, path in tables.items():
            session.sql(f"CREATE TABLE {name} WITH ('connector'='filesystem', "
                        f"'path'={_quoted(path)}, 'format'='parquet')")
        return session

    def expected(self, query: RandomQuery) -> pa.Table:
        return self.oracle.sql(query.sql).to_arrow_table()

    def problems(self, query: RandomQuery) -> list[str]:
        """Everything that differs from DuckDB's answer, for both flowsql runs."""
        expected = self.expected(query)
        found: list[str] = []
        for label, session, spill in self.runs:
            try:
                actual = session.sql(query.sql).to_arrow()
            except Exception as exc:  # reported with the other run's outcome, not raised
                found.append(f"{label}: {type(exc).__name__}: {exc}")
            else:
                found += [f"{label}: {line}" for line in differences(query, actual, expected)]
            left = sorted(str(p.relative_to(spill)) for p in spill.rglob("*"))
            if left:
                found.append(f"{label}: io.tmp.dirs not empty afterwards: {left[:5]}")
        return found

    def close(self) -> None:
        for _, session, _ in self.runs:
            session.close()
        self.oracle.close()
