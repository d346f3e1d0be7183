"""Vectorized helpers that operators of several families (and connectors) share: record
batches by position, sort orders, group keys, exact decimals, held-memory accounting and
event times as epoch milliseconds. No operator lives here."""
