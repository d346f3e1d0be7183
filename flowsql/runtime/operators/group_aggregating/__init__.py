"""Building blocks of the changelog group aggregate (``operators/group_aggregate.py``).

* ``segments`` -- the per-batch layout (one contiguous segment per group: the group's
  state before the batch, then its records in arrival order) and the vectorized scans over
  it (segmented running sums, running extremes, interval maxima, per-value reference
  counts);
* ``numeric`` -- aggregate arguments and sums as numpy arrays and back (exact decimals).
"""
