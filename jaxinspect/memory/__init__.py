"""The `memory` command: live bytes at the peak from XLA's buffer assignment, report, renderers."""
