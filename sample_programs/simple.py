"""The smallest examples of JAX's pipeline: elementwise arithmetic and transcendentals."""

import jax.numpy as jnp

# Analytic FLOPs (x: f32[1000]), as `jaxinspect cost` reports them (loop-aware = XLA's, no loops):
#   scale_shift: 2 * 1000 (mul, add); axpy: 2 * 1000 (mul, add);
#   sin_cos: 1000 FLOPs (add) + 2 * 1000 transcendentals (sin, cos).


def scale_shift(x):
    """f(x) = x * 2 + 1."""
    return x * 2 + 1


def axpy(x, y):
    """f(x, y) = 2 * x + y."""
    return 2 * x + y


def sin_cos(x):
    """f(x) = sin(x) + cos(x)."""
    return jnp.sin(x) + jnp.cos(x)
