"""The report models: frozen dataclasses every renderer reads, one module per report."""
