"""The peak keyed state `nexmark run` reports: the largest total over a job's operators."""

from __future__ import annotations

from flowsql.nexmark.runner import _StatePeak


def test_state_peak_sums_operators_and_keeps_the_largest_sample() -> None:
    peak = _StatePeak()
    assert (peak.bytes, peak.rows) == (None, None)
    peak.sample([{"operator": "Source", "records_in": 10},
                 {"operator": "GroupAggregate", "state_bytes": 300, "state_rows": 3},
                 {"operator": "Rank", "state_bytes": 200, "state_rows": 5}])
    assert (peak.bytes, peak.rows) == (500, 8)
    peak.sample([{"operator": "GroupAggregate", "state_bytes": 100, "state_rows": 9},
                 {"operator": "Rank", "state_bytes": None, "state_rows": None}])
    assert (peak.bytes, peak.rows) == (500, 9)


def test_a_job_without_keyed_state_peaks_at_zero() -> None:
    peak = _StatePeak()
    peak.sample([{"operator": "Source", "records_in": 10, "records_out": 10}])
    assert (peak.bytes, peak.rows) == (0, 0)
