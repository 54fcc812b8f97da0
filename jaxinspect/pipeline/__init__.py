"""JAX's pipeline run once: trace, lower, compile, analyses, execution timing."""
