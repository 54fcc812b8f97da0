"""The smallest examples of JAX's pipeline: elementwise arithmetic and transcendentals."""

import jax.numpy as jnp


def scale_shift(x):
    """f(x) = x * 2 + 1."""
    return x * 2 + 1


def axpy(x, y):
    """f(x, y) = 2 * x + y."""
    return 2 * x + y


def sin_cos(x):
    """f(x) = sin(x) + cos(x)."""
    return jnp.sin(x) + jnp.cos(x)
