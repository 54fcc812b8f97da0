"""jaxinspect: show every stage of JAX's compilation pipeline for one function."""

__version__ = "0.1.0"
