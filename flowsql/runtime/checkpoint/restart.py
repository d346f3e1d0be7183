"""Restart strategies: after a failure, may the job restart from its latest checkpoint, and
after what delay? A pure decision over the failure times.

Options and defaults are Flink's (``restart-strategy.*``, as of Flink 1.18):

* ``restart-strategy.type``: ``none`` (aliases ``off``, ``disable``), ``fixed-delay``
  (``fixeddelay``) or ``exponential-delay`` (``exponentialdelay``). Unset: ``none`` without
  checkpointing; with checkpointing, fixed-delay with ``Integer.MAX_VALUE`` attempts and a
  1 s delay (Flink 1.19 changed this fallback to exponential-delay; we keep the fixed delay);
* ``restart-strategy.fixed-delay.attempts`` (1) and ``.delay`` (1 s): the job may restart
  while it has failed at most ``attempts`` times, each time after ``delay``;
* ``restart-strategy.exponential-delay.initial-backoff`` (1 s), ``.max-backoff`` (5 min),
  ``.backoff-multiplier`` (2.0), ``.reset-backoff-threshold`` (1 h), ``.jitter-factor``
  (0.1): always restarts; the first failure waits the initial backoff, each further one the
  previous backoff times the multiplier, capped at the maximum; when the job ran at least
  the reset threshold since its last restart, the backoff starts over. The returned delay is
  the backoff moved by ``jitter * jitter-factor`` of itself (``jitter`` in [-1, 1], drawn by
  the caller, so the decision stays a function) and never above the maximum.

Durations are given in milliseconds (``int``) or as ``datetime.timedelta``: text such as
``'10 s'`` is parsed by the settings layer before it reaches here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from flowsql.errors import ExecutionError

TYPE = "restart-strategy.type"
FIXED_DELAY_ATTEMPTS = "restart-strategy.fixed-delay.attempts"
FIXED_DELAY_DELAY = "restart-strategy.fixed-delay.delay"
INITIAL_BACKOFF = "restart-strategy.exponential-delay.initial-backoff"
MAX_BACKOFF = "restart-strategy.exponential-delay.max-backoff"
BACKOFF_MULTIPLIER = "restart-strategy.exponential-delay.backoff-multiplier"
RESET_BACKOFF_THRESHOLD = "restart-strategy.exponential-delay.reset-backoff-threshold"
JITTER_FACTOR = "restart-strategy.exponential-delay.jitter-factor"

#: Java's Integer.MAX_VALUE: Flink's "unlimited" restart attempts
UNLIMITED_ATTEMPTS = 2**31 - 1


@dataclass(frozen=True)
class NoRestart:
    """The first failure fails the job."""


@dataclass(frozen=True)
class FixedDelay:
    attempts: int = 1
    delay_ms: int = 1_000

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.delay_ms < 0:
            raise ExecutionError(f"'{FIXED_DELAY_ATTEMPTS}' and '{FIXED_DELAY_DELAY}' must "
                                 "not be negative")


@dataclass(frozen=True)
class ExponentialDelay:
    initial_backoff_ms: int = 1_000
    max_backoff_ms: int = 300_000
    backoff_multiplier: float = 2.0
    reset_backoff_threshold_ms: int = 3_600_000
    jitter_factor: float = 0.1

    def __post_init__(self) -> None:
        if not 0 < self.initial_backoff_ms <= self.max_backoff_ms:
            raise ExecutionError(f"'{INITIAL_BACKOFF}' must be positive and at most "
                                 f"'{MAX_BACKOFF}'")
        if self.backoff_multiplier < 1.0:
            raise ExecutionError(f"'{BACKOFF_MULTIPLIER}' must be at least 1.0")
        if self.reset_backoff_threshold_ms <= 0:
            raise ExecutionError(f"'{RESET_BACKOFF_THRESHOLD}' must be positive")
        if not 0.0 <= self.jitter_factor <= 1.0:
            raise ExecutionError(f"'{JITTER_FACTOR}' must be between 0.0 and 1.0")


RestartStrategy = NoRestart | FixedDelay | ExponentialDelay

#: the strategy of a checkpointed job that configures none
DEFAULT_WITH_CHECKPOINTING = FixedDelay(attempts=UNLIMITED_ATTEMPTS, delay_ms=1_000)


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    delay_ms: int
    reason: str


def decide(strategy: RestartStrategy, failure_times_ms: Sequence[int],
           jitter: float = 0.0) -> RestartDecision:
    """Whether to restart after the last of ``failure_times_ms`` (every failure of the job
    so far, ascending), and after what delay; see the module docstring."""
    if not failure_times_ms:
        raise ValueError("a restart decision needs at least the failure being decided on")
    if any(b < a for a, b in zip(failure_times_ms, failure_times_ms[1:])):
        raise ValueError("failure times must be ascending")
    if not -1.0 <= jitter <= 1.0:
        raise ValueError(f"jitter must be in [-1, 1], got {jitter}")
    if isinstance(strategy, NoRestart):
        return RestartDecision(False, 0, "restart strategy 'none'")
    if isinstance(strategy, FixedDelay):
        failures = len(failure_times_ms)
        if failures > strategy.attempts:
            return RestartDecision(False, 0, f"failed {failures} times, at most "
                                             f"{strategy.attempts} restart attempts")
        return RestartDecision(True, strategy.delay_ms, f"restart attempt {failures} of "
                                                        f"{strategy.attempts}")
    backoff = _exponential_backoff(strategy, failure_times_ms)
    delay = min(strategy.max_backoff_ms,
                round(backoff * (1.0 + jitter * strategy.jitter_factor)))
    return RestartDecision(True, max(0, delay), f"exponential backoff {backoff} ms")


def _exponential_backoff(strategy: ExponentialDelay, failure_times_ms: Sequence[int]) -> float:
    backoff = float(strategy.initial_backoff_ms)
    for previous, failure in zip(failure_times_ms, failure_times_ms[1:]):
        ran_ms = failure - previous - backoff
        if ran_ms >= strategy.reset_backoff_threshold_ms:
            backoff = float(strategy.initial_backoff_ms)
        else:
            backoff = min(backoff * strategy.backoff_multiplier, float(strategy.max_backoff_ms))
    return backoff


def strategy_from_options(options: Mapping[str, object],
                          checkpointing_enabled: bool) -> RestartStrategy:
    """The strategy Flink's ``restart-strategy.*`` options select (see the module
    docstring for values, aliases and defaults)."""
    name = options.get(TYPE)
    if name is None:
        return DEFAULT_WITH_CHECKPOINTING if checkpointing_enabled else NoRestart()
    kind = str(name).strip().lower()
    if kind in ("none", "off", "disable"):
        return NoRestart()
    if kind in ("fixed-delay", "fixeddelay"):
        return FixedDelay(
            attempts=_integer(options, FIXED_DELAY_ATTEMPTS, FixedDelay.attempts),
            delay_ms=_duration_ms(options, FIXED_DELAY_DELAY, FixedDelay.delay_ms))
    if kind in ("exponential-delay", "exponentialdelay"):
        defaults = ExponentialDelay()
        return ExponentialDelay(
            initial_backoff_ms=_duration_ms(options, INITIAL_BACKOFF,
                                            defaults.initial_backoff_ms),
            max_backoff_ms=_duration_ms(options, MAX_BACKOFF, defaults.max_backoff_ms),
            backoff_multiplier=_number(options, BACKOFF_MULTIPLIER,
                                       defaults.backoff_multiplier),
            reset_backoff_threshold_ms=_duration_ms(options, RESET_BACKOFF_THRESHOLD,
                                                    defaults.reset_backoff_threshold_ms),
            jitter_factor=_number(options, JITTER_FACTOR, defaults.jitter_factor))
    raise ExecutionError(f"'{TYPE}' = '{name}' is not supported (none, fixed-delay, "
                         "exponential-delay)")


def _integer(options: Mapping[str, object], key: str, default: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ExecutionError(f"'{key}' must be an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ExecutionError(f"'{key}' must be an integer, got {value!r}") from None


def _number(options: Mapping[str, object], key: str, default: float) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ExecutionError(f"'{key}' must be a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise ExecutionError(f"'{key}' must be a number, got {value!r}") from None


def _duration_ms(options: Mapping[str, object], key: str, default: int) -> int:
    value = options.get(key, default)
    if isinstance(value, timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ExecutionError(f"'{key}' must be a duration (milliseconds or a timedelta), got "
                         f"{value!r}")
