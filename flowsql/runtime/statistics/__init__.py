"""Computing table statistics from the data: what ``ANALYZE TABLE`` reads and measures.

One idea per module: ``hyperloglog`` (the distinct-count sketch), ``numeric_form`` (ordered
values as the floats statistics compare), ``equi_depth`` (the histogram sample and its
bounds), ``column_profile`` (everything measured about one column, batch by batch),
``fingerprint`` (what identifies a table's files), ``freshness`` (whether stored statistics
still describe the files), ``parquet_footer`` (column statistics from Parquet metadata,
without reading data) and ``analyze_table`` (the scan that feeds the profiles). Nothing
here is imported by the package itself, so importing one module pulls in only what it
needs.
"""
