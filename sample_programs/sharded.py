"""Sharded programs for meshes of devices: a data-parallel training step, a 2-D sharded matmul,
and a shard_map reduction. Run them with `--devices 8` on CPU, or `--topology v5e:2x2` for TPU.
"""

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def loss(params, x, y):
    """Mean squared error of a relu MLP (784 -> 256 -> 10)."""
    hidden = jnp.maximum(x @ params["w1"] + params["b1"], 0.0)
    logits = hidden @ params["w2"] + params["b2"]
    return jnp.mean((logits - y) ** 2)


def train_step(params, x, y):
    """One SGD step; with the batch split over `data`, the gradients are all-reduced."""
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def matmul(x, w):
    """x @ w, for a spec that splits the contraction (an all-reduce) or the output."""
    return x @ w


def _psum_rows(block):
    # Each device sums its rows; psum adds the partial sums over `data`.
    return jax.lax.psum(block.sum(axis=0), "data")


def column_sums(x):
    """Column sums of x, rows split over 8 devices with shard_map and combined by psum."""
    mesh = jax.sharding.Mesh(jax.devices()[:8], ("data",))
    return jax.shard_map(_psum_rows, mesh=mesh, in_specs=P("data", None), out_specs=P())(x)


def lm_loss(params, tokens):
    """Next-token cross-entropy of a small decoder-only stack of MLP blocks (no attention)."""
    h = params["embed"][tokens[:, :-1]]
    for layer in params["layers"]:
        h = h + jax.nn.gelu(h @ layer["w_in"]) @ layer["w_out"]
    logits = h @ params["embed"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))


def lm_step(params, tokens):
    """One SGD step of lm_loss: the loss and the updated parameters."""
    loss, grads = jax.value_and_grad(lm_loss)(params, tokens)
    return loss, jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)
