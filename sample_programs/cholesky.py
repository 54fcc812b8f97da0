"""A Cholesky factorization: on CPU, XLA calls LAPACK (potrf) through a custom call.

Analytic FLOPs (n = 64):
- ``a @ a.T``: 2 n^3 = 524,288 (counted by XLA)
- ``+ n * I``: n^2 = 4,096 adds (counted by XLA)
- ``cholesky``: about n^3 / 3 = 87,381 in LAPACK's potrf, a custom call XLA does **not** count;
  jaxinspect flags it as "not counted / lower bound". JAX's wrapper around it (lower-triangle
  mask, NaN fill on failure) adds 7 n^2 elementwise ops, so `jaxinspect cost` reports
  2 n^3 + 8 n^2 + 1 = 557,057 counted FLOPs (XLA's own total, 557,056, has the custom call's
  -1 "unknown" sentinel added in).
"""

import jax.numpy as jnp


def factor(a):
    """Lower Cholesky factor of the symmetric positive definite a @ a.T + n * I."""
    n = a.shape[0]
    spd = a @ a.T + n * jnp.eye(n, dtype=a.dtype)
    return jnp.linalg.cholesky(spd)
