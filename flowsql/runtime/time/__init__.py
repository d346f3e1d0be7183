"""Event time: watermark generation and merging, and event-time timers."""
