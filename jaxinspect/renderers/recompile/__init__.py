"""The ``recompile`` sweep as a rich table and as JSON."""
