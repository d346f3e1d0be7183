"""Joins, batch and streaming.

Batch: ``hash_join`` (equi keys on Acero), ``sort_merge_join`` (equi keys over inputs sorted
on them, one key range at a time) and ``nested_loop_join`` (any condition); each finds
matching row pairs and lets ``join_output`` turn them into the rows of every join kind.

Streaming: ``stream_join`` (regular join with retractions), ``interval_join`` and
``window_join`` (event time). ``join_condition`` finds the row pairs of a batch and stored
rows that satisfy the equi keys and the residual (the same key join the batch hash join
uses); ``side_state`` lays out one input's stored rows in keyed state and assembles output
rows from index arrays in which ``-1`` means "padded with NULLs"; ``event_time_join`` is
the base of the two event-time joins.
"""
