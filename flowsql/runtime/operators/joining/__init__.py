"""Building blocks shared by the streaming joins (regular and interval).

``condition`` finds the row pairs of a batch and stored rows that satisfy the equi keys and
the residual (the same Acero key join and residual evaluation the batch hash join uses);
``sides`` lays out one input's stored rows in keyed state and assembles output rows from
index arrays in which ``-1`` means "padded with NULLs".
"""
