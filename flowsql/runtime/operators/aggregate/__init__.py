"""GROUP BY without windows: the batch hash aggregate, and the streaming changelog group
aggregate with its kernels.

* ``hash_aggregate`` -- Acero group-bys over the (bounded) input, chunk by chunk to
  partial aggregates when every aggregate merges, spilling beyond the memory budget;
* ``partial_aggregates`` -- partial aggregates of a chunk, their merge, their final values
  (the variance family as count, mean and M2);
* ``spilled_groups`` -- spill runs partitioned by a hash of the group keys;
* ``large_group`` -- one spilled group too large to hold, aggregated streaming over its rows
  (DISTINCT aggregates partitioned by their argument's values);
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
