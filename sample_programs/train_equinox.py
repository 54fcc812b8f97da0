"""An Equinox MLP (its activation is a function-valued field) and its optax Adam step.

The model's arrays are traced; the activation function is static, as ``equinox.filter_jit``
treats it. ``model`` is also a callable target: ``train_equinox.py:model --arg x=f32[16]``.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

optimizer = optax.adam(1e-3)


def make_model(features=16, hidden=32, classes=10, seed=0):
    """A two-hidden-layer MLP with gelu activations."""
    key = jax.random.key(seed)
    return eqx.nn.MLP(features, classes, hidden, depth=2, activation=jax.nn.gelu, key=key)


def init_opt_state(features=16, hidden=32, classes=10):
    """Adam's state for the model's arrays."""
    model = make_model(features, hidden, classes)
    return optimizer.init(eqx.filter(model, eqx.is_array))


@eqx.filter_jit
def train_step(model, opt_state, x, labels):
    """One Adam step on the softmax cross-entropy of a batch; returns (model, state, loss)."""

    def loss_of(model):
        logits = jax.vmap(model)(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    loss, grads = eqx.filter_value_and_grad(loss_of)(model)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


model = make_model()


def example_args(batch=8, features=16):
    """The arguments of ``train_step`` in order, for ``args: {from: ...}``."""
    return (
        make_model(features),
        init_opt_state(features),
        jnp.zeros((batch, features)),
        jnp.zeros((batch,), jnp.int32),
    )
