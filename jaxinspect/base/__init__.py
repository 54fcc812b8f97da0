"""The models every feature shares: the inspection report of one run, and a failed case."""
