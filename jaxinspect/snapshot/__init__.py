"""HLO snapshots for CI: capture, store, compare and gate the compiled form of functions."""
