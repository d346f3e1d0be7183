"""Sessions wire the layers together: sql -> optimizer -> runtime (or spark).

``flowsql.connect(**settings)`` returns a :class:`Session`; ``Session.sql(text)`` runs one
statement (``session.execute``) and returns a :class:`~flowsql.session.result.Result`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from flowsql.planner.catalog import Catalog
from flowsql.planner.config.settings import default_settings, validate_setting
from flowsql.planner.query_progress import ProgressSource, QueryProgress
from flowsql.planner.udf import UserFunction
from flowsql.session.result import Result

if TYPE_CHECKING:
    from flowsql.session.execute.statement_set import StatementSet

#: the settings a new session lists (``SET;``), with their declared defaults; every other
#: declared setting reads as its default until it is set
SESSION_KEYS = ("engine", "execution.memory-budget", "execution.batch-size",
                "parallelism.default", "max_parallelism", "optimizer.broadcast-threshold-rows",
                "execution.buffer-timeout", "execution.buffer-size", "execution.buffer-rows",
                "execution.channel-credits", "execution.runtime-mode",
                "pipeline.auto-watermark-interval")
DEFAULT_SETTINGS: dict[str, str] = {key: default_settings()[key] for key in SESSION_KEYS}


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
        #: count the progress of batch queries as they run, for :meth:`progress` (the
        #: shell turns it on; off, a run pays nothing for it)
        self.track_progress = False
        #: the running batch query's progress source (``snapshot()``), while one runs
        self.running_query: ProgressSource | None = None
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
        from flowsql.session.execute import execute_statement
        from flowsql.sql.statement_parser import parse_one

        return execute_statement(self, parse_one(text), text)


    def register_function(self, fn: Any, name: str | None = None, *, replace: bool = False,
                          **hints: Any) -> UserFunction:
        """Register a function decorated with ``flowsql.udf`` / ``udaf`` / ``udtf`` as
        ``name`` (default: ``fn.__name__``) for this session; keyword hints
        (``deterministic``, ``selectivity``, ``cost_per_row``, ``rows_per_call``,
        ``monotonic``) override the decorator's. ``fn`` must be importable by its module
        path (defined at the top level of a module other than ``__main__``): every worker
        process imports it by that path. CatalogError otherwise, or when the name is taken
        (unless ``replace``)."""
        from flowsql.session.execute.functions import register_function

        return register_function(self, fn, name, replace=replace, **hints)

    def statement_set(self) -> StatementSet:
        """A statement set (Flink's): ``add_insert_sql(...)`` INSERT INTO statements, then
        ``execute()`` runs them as one job that reads each table they share once."""
        from flowsql.session.execute.statement_set import StatementSet

        return StatementSet(self)

    def progress(self) -> QueryProgress | None:
        """How far the batch query running now has come (another thread asks while this
        session's thread runs it); None when none runs or ``track_progress`` is off."""
        running = self.running_query
        return None if running is None else running.snapshot()

    def run_script(self, text: str) -> Iterator[Result]:
        """Run ``;``-separated statements in order, yielding each result as it completes."""
        from flowsql.session.execute import execute_statement
        from flowsql.sql.statement_parser import parse_statements

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
