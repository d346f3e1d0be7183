"""Restart strategies: Flink's option names and defaults, and the decision per failure."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.restart import (
    DEFAULT_WITH_CHECKPOINTING,
    UNLIMITED_ATTEMPTS,
    ExponentialDelay,
    FixedDelay,
    NoRestart,
    RestartDecision,
    decide,
    strategy_from_options,
)


def test_defaults_follow_flink():
    assert strategy_from_options({}, checkpointing_enabled=False) == NoRestart()
    assert strategy_from_options({}, checkpointing_enabled=True) == \
        FixedDelay(attempts=2**31 - 1, delay_ms=1_000) == DEFAULT_WITH_CHECKPOINTING
    assert strategy_from_options({"restart-strategy.type": "fixed-delay"}, True) == \
        FixedDelay(attempts=1, delay_ms=1_000)
    assert strategy_from_options({"restart-strategy.type": "exponential-delay"}, True) == \
        ExponentialDelay(initial_backoff_ms=1_000, max_backoff_ms=300_000,
                         backoff_multiplier=2.0, reset_backoff_threshold_ms=3_600_000,
                         jitter_factor=0.1)
    for alias in ("none", "off", "disable", "NONE"):
        assert strategy_from_options({"restart-strategy.type": alias}, True) == NoRestart()


def test_options_are_read_by_their_flink_names():
    fixed = strategy_from_options({"restart-strategy.type": "fixeddelay",
                                   "restart-strategy.fixed-delay.attempts": "3",
                                   "restart-strategy.fixed-delay.delay": timedelta(seconds=10)},
                                  True)
    assert fixed == FixedDelay(3, 10_000)
    exponential = strategy_from_options({
        "restart-strategy.type": "exponential-delay",
        "restart-strategy.exponential-delay.initial-backoff": 500,
        "restart-strategy.exponential-delay.max-backoff": timedelta(minutes=1),
        "restart-strategy.exponential-delay.backoff-multiplier": "1.5",
        "restart-strategy.exponential-delay.reset-backoff-threshold": timedelta(minutes=10),
        "restart-strategy.exponential-delay.jitter-factor": 0.0}, True)
    assert exponential == ExponentialDelay(500, 60_000, 1.5, 600_000, 0.0)


@pytest.mark.parametrize("options", [
    {"restart-strategy.type": "failure-rate"},
    {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "x"},
    {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": -1},
    {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "10 s"},
    {"restart-strategy.type": "exponential-delay",
     "restart-strategy.exponential-delay.backoff-multiplier": 0.5},
    {"restart-strategy.type": "exponential-delay",
     "restart-strategy.exponential-delay.jitter-factor": 1.5},
    {"restart-strategy.type": "exponential-delay",
     "restart-strategy.exponential-delay.initial-backoff": 10_000,
     "restart-strategy.exponential-delay.max-backoff": 1_000},
])
def test_invalid_options_are_refused(options):
    with pytest.raises(ExecutionError):
        strategy_from_options(options, True)


def test_none_never_restarts():
    assert not decide(NoRestart(), [5]).restart


def test_fixed_delay_restarts_up_to_its_attempts():
    strategy = FixedDelay(attempts=2, delay_ms=10_000)
    assert decide(strategy, [100]) == RestartDecision(True, 10_000, "restart attempt 1 of 2")
    assert decide(strategy, [100, 20_000]).restart
    third = decide(strategy, [100, 20_000, 40_000])
    assert not third.restart and "at most 2" in third.reason
    assert decide(DEFAULT_WITH_CHECKPOINTING, list(range(1_000))).delay_ms == 1_000
    assert UNLIMITED_ATTEMPTS == 2_147_483_647


def test_exponential_delay_grows_caps_and_resets():
    strategy = ExponentialDelay(initial_backoff_ms=1_000, max_backoff_ms=5_000,
                                backoff_multiplier=2.0, reset_backoff_threshold_ms=60_000,
                                jitter_factor=0.0)
    failures: list[int] = []
    delays = []
    # each failure comes 100 ms after the previous restart: the backoff keeps growing
    now = 0
    for _ in range(5):
        failures.append(now)
        decision = decide(strategy, failures)
        assert decision.restart
        delays.append(decision.delay_ms)
        now += decision.delay_ms + 100
    assert delays == [1_000, 2_000, 4_000, 5_000, 5_000]
    # running 60 s since the last restart resets the backoff; 59.9 s does not
    last_restart = failures[-1] + delays[-1]
    assert decide(strategy, [*failures, last_restart + 60_000]).delay_ms == 1_000
    assert decide(strategy, [*failures, last_restart + 59_999]).delay_ms == 5_000


def test_exponential_jitter_moves_the_delay_within_its_factor_and_below_the_cap():
    strategy = ExponentialDelay(initial_backoff_ms=1_000, max_backoff_ms=1_500,
                                backoff_multiplier=2.0, reset_backoff_threshold_ms=60_000,
                                jitter_factor=0.1)
    assert decide(strategy, [0], jitter=1.0).delay_ms == 1_100
    assert decide(strategy, [0], jitter=-1.0).delay_ms == 900
    assert decide(strategy, [0, 1_100], jitter=1.0).delay_ms == 1_500
    assert decide(strategy, [0, 1_100], jitter=-0.5).delay_ms == 1_425


def test_decision_inputs_are_checked():
    with pytest.raises(ValueError):
        decide(NoRestart(), [])
    with pytest.raises(ValueError):
        decide(FixedDelay(), [5, 4])
    with pytest.raises(ValueError):
        decide(ExponentialDelay(), [5], jitter=2.0)
