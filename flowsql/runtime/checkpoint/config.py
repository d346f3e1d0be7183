"""A job's checkpointing configuration, read once from the session's settings.

The settings layer declares and validates the keys (``flowsql.planner.config.settings``);
this module turns them into the values the coordinator, the tasks and the restart logic
use. ``CheckpointSettings.of(settings)`` is None when ``execution.checkpointing.interval`` is
unset: checkpointing is off, as in Flink.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from flowsql.planner.config.settings import SettingValues
from flowsql.runtime.checkpoint.alignment import CheckpointingMode
from flowsql.runtime.checkpoint.coordinator_state import CheckpointingConfig
from flowsql.runtime.checkpoint.restart import (
    BACKOFF_MULTIPLIER,
    FIXED_DELAY_ATTEMPTS,
    FIXED_DELAY_DELAY,
    INITIAL_BACKOFF,
    JITTER_FACTOR,
    MAX_BACKOFF,
    RESET_BACKOFF_THRESHOLD,
    TYPE,
    RestartStrategy,
    strategy_from_options,
)

#: the directory checkpoints go to when checkpointing is on and no directory is set
DEFAULT_DIRECTORY = os.path.join(tempfile.gettempdir(), "flowsql-checkpoints")


@dataclass(frozen=True)
class CheckpointSettings:
    """What ``execution.checkpointing.*``, ``state.backend.*`` and ``restart-strategy.*``
    say for one job."""

    coordinator: CheckpointingConfig
    mode: CheckpointingMode
    directory: str
    num_retained: int
    backend: str
    incremental: bool
    rocksdb_dir: str

    @classmethod
    def of(cls, settings: Mapping[str, str]) -> CheckpointSettings | None:
        values = SettingValues(settings)
        interval = values.get("execution.checkpointing.interval")
        if interval is None:
            return None
        coordinator = CheckpointingConfig(
            interval_ms=interval,
            timeout_ms=values.duration_ms("execution.checkpointing.timeout"),
            min_pause_ms=values.duration_ms("execution.checkpointing.min-pause"),
            max_concurrent=values.integer(
                "execution.checkpointing.max-concurrent-checkpoints"),
            tolerable_failures=values.integer(
                "execution.checkpointing.tolerable-failed-checkpoints"))
        return cls(
            coordinator=coordinator,
            mode=CheckpointingMode(values.string("execution.checkpointing.mode").upper()),
            directory=values.get("execution.checkpointing.dir") or DEFAULT_DIRECTORY,
            num_retained=values.integer("execution.checkpointing.num-retained"),
            backend=values.string("state.backend.type"),
            incremental=values.boolean("execution.checkpointing.incremental"),
            rocksdb_dir=(values.get("state.backend.rocksdb.localdir")
                         or os.path.join(tempfile.gettempdir(), "flowsql-rocksdb")))


def restart_strategy(settings: Mapping[str, str]) -> RestartStrategy:
    """The ``restart-strategy.*`` settings as a strategy; the default depends on whether
    checkpointing is on (Flink's rule)."""
    values = SettingValues(settings)
    options: dict[str, object] = {}
    kind = values.get(TYPE)
    if kind is not None:
        options[TYPE] = kind
    attempts = values.get(FIXED_DELAY_ATTEMPTS)
    if attempts is not None:
        options[FIXED_DELAY_ATTEMPTS] = attempts
    for key in (FIXED_DELAY_DELAY, INITIAL_BACKOFF, MAX_BACKOFF, RESET_BACKOFF_THRESHOLD):
        options[key] = values.duration_ms(key)
    for key in (BACKOFF_MULTIPLIER, JITTER_FACTOR):
        options[key] = values.number(key)
    enabled = values.get("execution.checkpointing.interval") is not None
    return strategy_from_options(options, checkpointing_enabled=enabled)
