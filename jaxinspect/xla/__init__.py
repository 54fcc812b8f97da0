"""Readers of XLA's output: HLO text, shapes, source lines, per-op cost, buffers, collectives."""
