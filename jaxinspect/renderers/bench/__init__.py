"""The ``bench`` report as rich tables and as JSON."""
