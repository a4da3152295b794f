"""Unit tests of the analyses on hand-made micro traces with hand-computed answers."""
