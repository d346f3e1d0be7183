"""Checkpoints: the storage layout, its bookkeeping, barrier alignment, restart policy, and
the pieces that run them in a job (docs/checkpoints.md has the design).

The rules are a pure core with one thin I/O edge, tested without a disk, a clock or a
running job:

* :mod:`~flowsql.runtime.checkpoint.paths` -- where every file of a checkpoint lives, and
  which checkpoints a directory listing holds (pure);
* :mod:`~flowsql.runtime.checkpoint.metadata` -- the ``_metadata`` JSON document, the commit
  marker of a checkpoint (pure);
* :mod:`~flowsql.runtime.checkpoint.retention` -- latest completed checkpoint, which
  checkpoints and shared files to delete (pure);
* :mod:`~flowsql.runtime.checkpoint.storage` -- the I/O edge over ``pyarrow.fs`` (local
  paths, ``file://`` and ``s3://`` URIs): Arrow IPC state files, ``_metadata`` written last
  and atomically;
* :mod:`~flowsql.runtime.checkpoint.coordinator_state` -- the coordinator's pending
  checkpoints as a state machine (trigger, acknowledge, decline, expire, complete);
* :mod:`~flowsql.runtime.checkpoint.alignment` -- barrier alignment for a task's input
  channels (exactly-once blocks, at-least-once only tracks);
* :mod:`~flowsql.runtime.checkpoint.restart` -- restart strategies and their decision
  function.

Running them:

* :mod:`~flowsql.runtime.checkpoint.config` -- the job's settings, read once;
* :mod:`~flowsql.runtime.checkpoint.coordinator` -- the coordinator of one running job
  (trigger thread, acknowledgements, ``_metadata``, notices, retention, final checkpoint);
* :mod:`~flowsql.runtime.checkpoint.task_checkpointer` -- a task's side: alignment over its
  gate and own sources, snapshots, the writer thread, commands;
* :mod:`~flowsql.runtime.checkpoint.task_state` and
  :mod:`~flowsql.runtime.checkpoint.backends` -- persisting and restoring operator state
  (hashmap or rocksdb);
* :mod:`~flowsql.runtime.checkpoint.recovery` -- attempts, restarts and the stop with a
  final checkpoint, for the single-process and the parallel run alike;
* :mod:`~flowsql.planner.operator_ids` (in the planner: a pure function of the plan) --
  how a checkpoint names operators.

Nothing here is called by operators: the task's input handling aligns barriers, the task
snapshots its operators' ``StateStore`` and uploads through the storage, and the
coordinator completes checkpoints.
"""
