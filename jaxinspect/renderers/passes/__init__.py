"""Renderers of the ``passes`` report: console tables and JSON."""
