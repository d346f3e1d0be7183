"""The runtime: physical plans executed as dataflows of operators over Arrow record batches."""
