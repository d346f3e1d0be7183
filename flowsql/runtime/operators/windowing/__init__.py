"""Building blocks of the window aggregate operator: window specs and assignment,
accumulators, session merging."""
