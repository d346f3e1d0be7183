"""Helpers of the event-time OVER aggregate operator (:mod:`..over_aggregate`)."""
