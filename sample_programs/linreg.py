"""Linear regression, the classic tour of JAX's transformations."""

import jax
import jax.numpy as jnp

# Analytic FLOPs (batch B=64, features F=16), as `jaxinspect cost` reports them:
#   predict / predict_batch: 2*B*F (x . w) + B (+ b) = 2,112
#   loss_fn: 2*B*F + 3*B (+ b, - y, square) + (B - 1) (sum) + 1 (mean's divide) = 2,304
#   grad_loss: 2 * 2*B*F (forward and x^T g) + 6*B + (B - 1) (db sum) = 4,543
#   update_params: grad_loss + 2*(F + 1) (lr * g, p - lr * g) = 4,577
#   hessian: 2 * 2*F*B*F (X^T X, forward-over-reverse) = 65,536 plus 1,536 elementwise
#   (2.3%) -> 67,072.


def predict(params, x):
    """y = x . w + b for one example."""
    return jnp.dot(x, params["w"]) + params["b"]


def loss_fn(params, x, y):
    """Mean squared error over a batch."""
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def update_params(params, x, y, lr=0.1):
    """One step of gradient descent on loss_fn."""
    grads = jax.grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


#: predict over a batch of examples, parameters shared.
predict_batch = jax.vmap(predict, in_axes=(None, 0))

#: Gradient of the loss with respect to the parameters, as a jax.grad object.
grad_loss = jax.grad(loss_fn)


def hessian(w, x, y):
    """Hessian of the loss with respect to the weight vector (bias fixed at 0)."""
    return jax.hessian(lambda w_: loss_fn({"w": w_, "b": 0.0}, x, y))(w)
