"""A relu MLP: predict(params, x) with one hidden layer, 784 -> 256 -> 10."""

import jax.numpy as jnp

# Analytic FLOPs (batch 128, 784 -> 256 -> 10), exactly what XLA counts:
#   2*128*784*256 (x @ w1) + 2*128*256*10 (hidden @ w2)
#   + 128*256 (+ b1) + 128*256 (relu max) + 128*10 (+ b2) = 52,102,400.


def relu(x):
    return jnp.maximum(x, 0.0)


def predict(params, x):
    """Logits of a two-layer relu MLP for a batch of flattened images."""
    hidden = relu(x @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]
