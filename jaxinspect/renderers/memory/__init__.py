"""The ``memory`` report as rich tables and as JSON."""
