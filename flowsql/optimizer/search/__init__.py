"""The physical search: a memo of the physical alternatives of every logical operator,
required distributions propagated downward, enforcers (exchanges) only where a requirement
is not met, and the cheapest plan per (group, requirement) by the cost model
(``optimizer/cost``). It replaces, for batch plans on the local engine, the fixed choice
of algorithms and the exchange placement pass that followed it."""

from flowsql.optimizer.search.plan_search import (
    ONE_SUBTASK,
    SearchResult,
    runs_on_workers,
    search_physical_plan,
)

__all__ = ["ONE_SUBTASK", "SearchResult", "runs_on_workers", "search_physical_plan"]
