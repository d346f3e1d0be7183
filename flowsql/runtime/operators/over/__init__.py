"""SQL window functions (``... OVER (...)``).

* ``batch_window_functions`` -- the blocking batch operator (``WindowExec``): every window
  function call over the whole input;
* ``window_functions`` and ``window_frames`` -- its vectorized kernels: function values and
  frame bounds over rows sorted by (partition, order);
* ``over_aggregate`` -- the streaming event-time OVER aggregate (``OverAggregateExec``);
* ``over_aggregate_evaluation`` -- its pure core: aggregates of released rows over the rows
  their frames can still reach.
"""
