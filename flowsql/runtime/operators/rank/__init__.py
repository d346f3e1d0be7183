"""Keeping the first rows by an order: the batch ``ORDER BY ... LIMIT`` and the three
algorithms behind a streaming ``RankExec`` (ROW_NUMBER kept to a range).

* :mod:`.order_by_limit`: batch ``TopNExec``, keeping only limit + offset rows while
  consuming;
* :mod:`.streaming_rank`: the ``RankExec`` operator, which chooses one of:
* :mod:`.window_rank`: window Top-N / window deduplication, insert-only output when a
  window fires (Flink's ``WindowRankOperator``);
* :mod:`.rowtime_deduplicate`: rowtime deduplication, keep-first or keep-last per key,
  updating output (Flink's ``RowTimeDeduplicateFunction``);
* :mod:`.streaming_top_n`: unwindowed Top-N per partition, updating output per input batch
  (Flink's mini-batch ``AppendOnlyTopNFunction``).

:mod:`.ranking_state` holds what the streaming ones share: state layout, partition ids,
stable ranking.
"""
