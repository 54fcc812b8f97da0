"""The `cost` command: its runner, the report (roofline points, measured times) and renderers."""
