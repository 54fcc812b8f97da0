"""The ``cost`` report as rich tables and as JSON."""
