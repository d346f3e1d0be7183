"""Streaming execution: the push-based runner and continuous jobs."""
