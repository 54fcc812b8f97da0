"""Where a compiled program's cost is: per op, per loop, per source line, on a roofline."""
