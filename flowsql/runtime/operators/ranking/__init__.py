"""The three algorithms behind a streaming ``RankExec`` (ROW_NUMBER kept to a range).

* :mod:`.window_rank`: window Top-N / window deduplication, insert-only output when a
  window fires (Flink's ``WindowRankOperator``);
* :mod:`.deduplicate`: rowtime deduplication, keep-first or keep-last per key, updating
  output (Flink's ``RowTimeDeduplicateFunction``);
* :mod:`.top_n`: unwindowed Top-N per partition, updating output per input batch
  (Flink's mini-batch ``AppendOnlyTopNFunction``).

:mod:`.common` holds what they share: state layout, partition ids, stable ranking.
``operators/rank.py`` chooses one of them from the plan node.
"""
