"""Model tests: the column helpers under the trace tables."""
