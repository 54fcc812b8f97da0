"""Renderers of the ``topologies`` report."""
