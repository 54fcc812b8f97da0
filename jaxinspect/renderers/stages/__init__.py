"""The ``stages`` report as rich tables and as JSON."""
