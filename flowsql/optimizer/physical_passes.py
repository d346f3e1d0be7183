"""The physical planning passes, in the order they run: optimized logical plan -> the
physical plan an engine runs.

Each pass is a name and a function from one :class:`PhysicalPlanning` state to the next,
with a condition saying when it applies (batch or streaming mode, the engine, INSERT INTO).
The list ends in ``sanity_check``, which verifies what the earlier passes promise, so a pass
that breaks a promise is reported as a PlanError naming the node, not as a wrong result or
a query that never ends. Statement execution calls :func:`plan_physical` and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from flowsql.errors import PlanError
from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.optimizer.physical_planner import to_physical
from flowsql.optimizer.plan_window_aggregate import runtime_mode
from flowsql.optimizer.sanity_check import sanity_check
from flowsql.optimizer.search import SearchResult, search_physical_plan
from flowsql.optimizer.share_subplans import share_subplans
from flowsql.optimizer.streaming import StreamInfo, to_streaming
from flowsql.optimizer.streaming.distribution import enforce_streaming_distribution
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.logical import LogicalPlan
from flowsql.planner.physical import PhysicalPlan

__all__ = ["PHYSICAL_PASSES", "PhysicalPass", "PhysicalPlanning", "plan_physical",
           "streaming_mode"]


@dataclass(frozen=True)
class PhysicalPlanning:
    """What the passes hand on: the inputs of physical planning (the optimized logical
    plan, the settings, the estimator the logical rules filled, the INSERT INTO sink) and
    the physical plan so far, with what its root delivers as a stream (streaming mode)."""

    logical: LogicalPlan
    settings: dict[str, str]
    estimator: CardinalityEstimator = field(default_factory=CardinalityEstimator)
    #: wraps the plan in the sink of INSERT INTO (None: a query whose rows are returned)
    sink: Callable[[PhysicalPlan], PhysicalPlan] | None = None
    #: None until ``choose_operators`` ran
    plan: PhysicalPlan | None = None
    #: what the root delivers as a stream; set by ``plan_streaming``, None in batch mode
    stream: StreamInfo | None = None
    #: the physical search's result (batch plans); None in streaming mode
    search: SearchResult | None = None
    #: names of the passes that ran, in order
    passes_run: tuple[str, ...] = ()

    @property
    def physical(self) -> PhysicalPlan:
        if self.plan is None:
            raise PlanError("physical planning: no physical plan yet (choose_operators runs "
                            "first)")
        return self.plan


@dataclass(frozen=True)
class PhysicalPass:
    """``run`` applies when ``applies`` says so; ``name`` is what errors and
    ``PhysicalPlanning.passes_run`` call it."""

    name: str
    run: Callable[[PhysicalPlanning], PhysicalPlanning]
    applies: Callable[[PhysicalPlanning], bool] = lambda state: True


def streaming_mode(settings: dict[str, str]) -> bool:
    """Whether queries run as streams (``execution.runtime-mode`` = ``streaming``); a
    PlanError with the spark engine, which runs bounded queries in batch mode only."""
    if runtime_mode(settings) != "streaming":
        return False
    if settings.get("engine") == "spark":
        raise PlanError("the spark engine runs bounded queries in batch mode only; SET "
                        "'execution.runtime-mode' = 'batch' or use the local engine")
    return True


# -- conditions ------------------------------------------------------------------------------

def _inserts(state: PhysicalPlanning) -> bool:
    return state.sink is not None


def _streams(state: PhysicalPlanning) -> bool:
    return streaming_mode(state.settings)


def _batch(state: PhysicalPlanning) -> bool:
    return not streaming_mode(state.settings)


# -- passes ----------------------------------------------------------------------------------

def choose_operators(state: PhysicalPlanning) -> PhysicalPlanning:
    """An algorithm per logical node, with row estimates (``physical_planner``)."""
    return replace(state, plan=to_physical(state.logical, state.settings, state.estimator))


def add_sink(state: PhysicalPlanning) -> PhysicalPlanning:
    """INSERT INTO: the plan cast to the target's columns and written by its sink."""
    assert state.sink is not None
    return replace(state, plan=state.sink(state.physical))


def plan_streaming(state: PhysicalPlanning) -> PhysicalPlanning:
    """Streaming algorithms where the batch ones would wait for the end of their input
    (``optimizer/streaming``)."""
    plan, stream = to_streaming(state.physical, state.settings)
    return replace(state, plan=plan, stream=stream)


def place_streaming_exchanges(state: PhysicalPlanning) -> PhysicalPlanning:
    """Exchanges for ``parallelism.default`` > 1 in a streaming plan: keyed operators hashed
    on their keys (``optimizer/streaming/distribution``)."""
    return replace(state, plan=enforce_streaming_distribution(state.physical, state.settings))


def search_physical(state: PhysicalPlanning) -> PhysicalPlanning:
    """Batch plans: the cheapest algorithms, exchanges and partial/final aggregate splits,
    and whether to run on one subtask, by cost (``optimizer/search``)."""
    result = search_physical_plan(state.physical, state.settings)
    return replace(state, plan=result.plan, search=result)


def share_common_subplans(state: PhysicalPlanning) -> PhysicalPlanning:
    """Identical subplans (a CTE or view used twice) run once, their output buffered for
    every consumer (``optimizer/share_subplans``)."""
    return replace(state, plan=share_subplans(state.physical))


def _shares_subplans(state: PhysicalPlanning) -> bool:
    return _batch(state) and SettingValues(state.settings).boolean("optimizer.share-subplans")


def check_plan(state: PhysicalPlanning) -> PhysicalPlanning:
    """Verify the finished plan (``optimizer/sanity_check``); the state is unchanged."""
    sanity_check(state.physical, state.settings, streaming=state.stream is not None)
    return state


PHYSICAL_PASSES: tuple[PhysicalPass, ...] = (
    # First: every later pass works on physical nodes.
    PhysicalPass("choose_operators", choose_operators),
    # Before streaming planning: a filesystem sink accepts only insert-only input, which the
    # streaming pass checks, and before exchanges, so a sink writes where its input runs
    # (every subtask its own files) instead of behind a gather.
    PhysicalPass("add_sink", add_sink, _inserts),
    # Before the streaming exchanges: it replaces batch operators by keyed streaming ones
    # (changelog aggregate, stream joins, Top-N), whose keys are what the exchanges hash on.
    PhysicalPass("plan_streaming", plan_streaming, _streams),
    PhysicalPass("place_streaming_exchanges", place_streaming_exchanges, _streams),
    # Batch plans: the groups are the nodes ``choose_operators`` built; exchanges only on the
    # local engine (Spark distributes a bounded plan itself, so there only the algorithms).
    PhysicalPass("search_physical", search_physical, _batch),
    # After the search: it compares finished subplans (algorithms chosen, exchanges placed,
    # so it knows which copies run in one stage).
    PhysicalPass("share_subplans", share_common_subplans, _shares_subplans),
    # Last: it verifies what every pass above promised.
    PhysicalPass("sanity_check", check_plan),
)


def plan_physical(logical: LogicalPlan, settings: dict[str, str],
                  estimator: CardinalityEstimator | None = None,
                  sink: Callable[[PhysicalPlan], PhysicalPlan] | None = None,
                  passes: tuple[PhysicalPass, ...] = PHYSICAL_PASSES) -> PhysicalPlanning:
    """Run ``passes`` (default: all of ``PHYSICAL_PASSES``) that apply, in order, over an
    optimized logical plan; the result's ``physical`` is the plan to run."""
    state = PhysicalPlanning(logical, settings, estimator or CardinalityEstimator(), sink)
    for physical_pass in passes:
        if physical_pass.applies(state):
            state = replace(physical_pass.run(state),
                            passes_run=(*state.passes_run, physical_pass.name))
    return state
