"""A vanilla RNN unrolled with lax.scan: h <- tanh(h @ W_h + x_t @ W_x + b)."""

import jax
import jax.numpy as jnp

# Analytic FLOPs (T=100 steps, batch 8, input 32, hidden 64), loop-aware:
#   T * (2*8*64*64 (h @ W_h) + 2*8*32*64 (x @ W_x) + 2*8*64 (two adds)) = 9,932,800,
#   plus the loop counter: T adds and T+1 compares -> 9,933,001 in `jaxinspect cost`;
#   T * 8*64 = 51,200 transcendentals (tanh). XLA's cost_analysis() counts one step (99,330).


def run(params, xs, h0):
    """Final hidden state after scanning over the time axis of xs."""

    def step(h, x):
        h = jnp.tanh(h @ params["w_h"] + x @ params["w_x"] + params["b"])
        return h, None

    h, _ = jax.lax.scan(step, h0, xs)
    return h
