"""Ingest tests: the Kineto reader, its cache, bad input, truncation, fuzzing, the real traces."""
