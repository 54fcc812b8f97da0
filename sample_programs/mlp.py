"""A relu MLP: predict(params, x) with one hidden layer, 784 -> 256 -> 10."""

import jax.numpy as jnp


def relu(x):
    return jnp.maximum(x, 0.0)


def predict(params, x):
    """Logits of a two-layer relu MLP for a batch of flattened images."""
    hidden = relu(x @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]
