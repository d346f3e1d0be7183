"""Window table functions (TUMBLE, HOP, CUMULATE, SESSION) over event time.

* ``window_table_function`` -- rows repeated once per window they belong to;
* ``window_aggregate`` -- the window TVF followed by GROUP BY keys, window_start, window_end
  (``WindowAggregateExec``), the plan's expressions evaluated into the columns that
  ``window_specs.window_aggregate_spec`` names, then windowed;
* ``cascading_window_aggregate`` -- aggregates over rows that already carry their window
  (``WindowedAggregateExec``);
* kernels: ``window_specs`` (what is computed), ``window_assignment`` (fixed windows of a
  record), ``slicing`` and ``slice_state`` (fixed windows as slices), ``session_merging``,
  ``accumulators`` and ``sorted_merge`` (mergeable partial aggregates).
"""
