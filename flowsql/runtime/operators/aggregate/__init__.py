"""GROUP BY without windows: the batch hash aggregate, and the streaming changelog group
aggregate with its kernels.

* ``hash_aggregate`` -- one Acero group-by over the whole (bounded) input;
* ``sort_aggregate`` -- input sorted on the groups: the complete groups of each batch are
  aggregated by the hash aggregate's machinery, one group stays open;
* ``changelog_group_aggregate`` -- updating output per batch over an insert-only or
  updating input (Flink's ``GroupAggFunction``);
* ``changelog_segments`` -- the per-batch layout (one contiguous segment per group: the
  group's state before the batch, then its records in arrival order) and the vectorized
  scans over it (segmented running sums, running extremes, interval maxima, per-value
  reference counts);
* ``numpy_sums`` -- aggregate arguments and sums as numpy arrays and back (exact decimals).
"""
