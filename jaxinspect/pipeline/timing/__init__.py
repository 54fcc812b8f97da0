"""Timing shared by ``stages`` and ``bench``: quiet garbage collection, timed calls, deadlines."""
