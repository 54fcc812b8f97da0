"""The way in: the typer app, its options, one module per command, and exit codes."""
