"""A flax NNX classifier with batch norm, and its optax AdamW train step (tiny sizes).

NNX modules mutate in place: ``forward`` updates the batch statistics, ``train_step`` the
parameters and the optimizer state. jaxinspect returns what a call writes, as ``nnx.jit``
does, so those updates are part of the compiled program.
"""

import optax
from flax import nnx


class Classifier(nnx.Module):
    """Linear, batch norm, relu, linear."""

    def __init__(self, features, hidden, classes, *, rngs):
        self.hidden = nnx.Linear(features, hidden, rngs=rngs)
        self.norm = nnx.BatchNorm(hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, classes, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.norm(self.hidden(x))))


def make_model(features=16, hidden=32, classes=10, seed=0):
    """A freshly initialized classifier."""
    return Classifier(features, hidden, classes, rngs=nnx.Rngs(seed))


def make_optimizer(features=16, hidden=32, classes=10, learning_rate=1e-3):
    """An AdamW optimizer over the classifier's parameters."""
    model = make_model(features, hidden, classes)
    return nnx.Optimizer(model, optax.adamw(learning_rate), wrt=nnx.Param)


def forward(model, x):
    """Logits for a batch (training mode: the batch statistics are updated)."""
    return model(x)


@nnx.jit
def train_step(model, optimizer, x, labels):
    """One AdamW step on the softmax cross-entropy of a batch; returns the loss."""

    def loss_of(model):
        logits = model(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    loss, grads = nnx.value_and_grad(loss_of)(model)
    optimizer.update(model, grads)
    return loss


#: A module instance is a callable target too: ``train_nnx.py:model`` with ``--arg x=f32[8,16]``.
model = make_model()
