"""Snapshot diffs and ``check`` reports as tables, JSON, Markdown and text."""
