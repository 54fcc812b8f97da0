"""A vanilla RNN unrolled with lax.scan: h <- tanh(h @ W_h + x_t @ W_x + b)."""

import jax
import jax.numpy as jnp


def run(params, xs, h0):
    """Final hidden state after scanning over the time axis of xs."""

    def step(h, x):
        h = jnp.tanh(h @ params["w_h"] + x @ params["w_x"] + params["b"])
        return h, None

    h, _ = jax.lax.scan(step, h0, xs)
    return h
