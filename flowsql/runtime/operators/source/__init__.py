"""Leaf operators that produce batches: table scans (filesystem, datagen, watched
directory) and literal VALUES rows."""
