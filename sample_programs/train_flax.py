"""A flax Linen classifier trained with optax AdamW through a ``TrainState`` (tiny sizes).

``init_state`` builds the state the way a training script does; jaxinspect evaluates it
abstractly from the spec (``from: train_flax.py:init_state``), so no adapter is needed.
"""

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state


class Classifier(nn.Module):
    """Two dense layers with a relu between them."""

    hidden: int = 32
    classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.classes)(x)


def init_state(features=16, hidden=32, learning_rate=1e-3, seed=0):
    """A fresh TrainState: parameters from ``init`` and an AdamW optimizer state."""
    model = Classifier(hidden=hidden)
    variables = model.init(jax.random.key(seed), jnp.zeros((1, features)))
    optimizer = optax.adamw(learning_rate, weight_decay=1e-4)
    return train_state.TrainState.create(
        apply_fn=model.apply, params=variables["params"], tx=optimizer
    )


@jax.jit
def train_step(state, x, labels):
    """One AdamW step on the softmax cross-entropy of a batch; returns (state, loss)."""

    def loss_of(params):
        logits = state.apply_fn({"params": params}, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    loss, grads = jax.value_and_grad(loss_of)(state.params)
    return state.apply_gradients(grads=grads), loss


def example_args(batch=8, features=16):
    """Every argument of ``train_step`` by name, for ``args: {from: ...}``."""
    return {
        "state": init_state(features),
        "x": jnp.zeros((batch, features)),
        "labels": jnp.zeros((batch,), jnp.int32),
    }
