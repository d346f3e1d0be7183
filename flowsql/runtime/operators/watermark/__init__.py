"""Event time: the operators that emit watermarks (the table's watermark assigner and the
processing-time clock), and the base class of every operator that waits for them."""
