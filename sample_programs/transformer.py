"""A small pre-norm transformer block: multi-head self-attention and an MLP, in plain jax.numpy."""

import jax
import jax.numpy as jnp

# Analytic FLOPs (B=2, T=64, D=128, H=4, head 32, MLP 512), dominated by matmuls:
#   4 * 2*B*T*D*D (q, k, v, o) + 2 * 2*B*H*T*T*32 (scores, weights @ v) + 2 * 2*B*T*D*512 (MLP)
#   = 54,525,952; layer norms, softmax, gelu and residuals add 987,136 (1.8%) -> 55,513,088.


def layer_norm(x, scale, eps=1e-6):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * scale


def attention(params, x, num_heads):
    batch, seq, dim = x.shape
    head = dim // num_heads
    q = (x @ params["wq"]).reshape(batch, seq, num_heads, head)
    k = (x @ params["wk"]).reshape(batch, seq, num_heads, head)
    v = (x @ params["wv"]).reshape(batch, seq, num_heads, head)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(head).astype(x.dtype)
    mask = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    scores = jnp.where(mask, scores, -1e9)
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, seq, dim)
    return out @ params["wo"]


def block(params, x, num_heads=4):
    """One causal transformer block with residual connections."""
    x = x + attention(params, layer_norm(x, params["ln1"]), num_heads)
    hidden = jax.nn.gelu(layer_norm(x, params["ln2"]) @ params["w1"])
    return x + hidden @ params["w2"]
