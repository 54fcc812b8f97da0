"""One module per command; each registers its command on the typer app."""
