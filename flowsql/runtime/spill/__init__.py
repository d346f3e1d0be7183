"""Spilling building blocks for blocking operators that outgrow ``execution.memory-budget``.

* :class:`SpillSpace` — the job's (or task's) directory of spill files under
  ``io.tmp.dirs``, removed when the job ends, fails or is cancelled;
* :class:`SpillWriter` / :class:`SpillRun` — a run of record batches written to and read
  back from an Arrow IPC file;
* :func:`partition_by_hash` — rows split into partitions by a salted hash of their keys,
  the step of grace hash joins and partitioned aggregates (a new salt per recursion level,
  so a partition that is still too large splits differently the next time).
"""

from flowsql.runtime.spill.hash_partitions import partition_by_hash, partition_indices
from flowsql.runtime.spill.spill_run import SpillRun, SpillWriter, spill_batches
from flowsql.runtime.spill.spill_space import SpillSpace

__all__ = ["SpillRun", "SpillSpace", "SpillWriter", "partition_by_hash", "partition_indices",
           "spill_batches"]
