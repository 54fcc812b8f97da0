"""The `passes` command: XLA's pass pipeline on one compilation, its report and renderers."""
