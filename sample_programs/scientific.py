"""Scientific programs whose inputs must be real values: a diffrax ODE solve, a blackjax NUTS
step and a numpyro SVI step, each with a factory that builds its arguments.

Random inputs do not fit them: diffrax refuses save times that do not increase, and NUTS
integrates for as many leapfrog steps as its state asks. Run them with ``--inputs factory``
(or ``inputs: factory`` in the spec) so that execution uses the factories' own arrays.
Problem sizes are small on purpose: the test suite runs every command on them.
"""

import blackjax
import diffrax
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

# --- diffrax: the Lotka–Volterra predator–prey model -------------------------------------


def _vector_field(t, y, params):
    prey, predator = y
    alpha, beta, gamma, delta = params
    return (
        alpha * prey - beta * prey * predator,
        delta * prey * predator - gamma * predator,
    )


def lotka_volterra(y0, ts, params):
    """Populations at the times ``ts`` (which must increase), from ``y0 = (prey, predator)``."""
    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(_vector_field),
        diffrax.Tsit5(),
        t0=ts[0],
        t1=ts[-1],
        dt0=0.1,
        y0=y0,
        args=params,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
        max_steps=4096,
    )
    return solution.ys


def lotka_volterra_inputs(points=16):
    """``y0``, increasing save times and the model's four rates."""
    return {
        "y0": (jnp.asarray(10.0), jnp.asarray(10.0)),
        "ts": jnp.linspace(0.0, 15.0, points),
        "params": jnp.asarray([0.1, 0.02, 0.4, 0.02]),
    }


# --- blackjax: one NUTS step on a logistic-regression posterior --------------------------

# Enough data for a sharp posterior: from a state far from it (random values), the first
# leapfrog step diverges; from the factory's state near the mode, NUTS takes 31.
_FEATURES = 21
_EXAMPLES = 1000


def _regression_data():
    key_x, key_y = jax.random.split(jax.random.key(1))
    x = jax.random.normal(key_x, (_EXAMPLES, _FEATURES))
    true_w = jnp.arange(1.0, _FEATURES + 1.0) / _FEATURES
    y = (jax.random.uniform(key_y, (_EXAMPLES,)) < jax.nn.sigmoid(x @ true_w)).astype(jnp.float32)
    return x, y


def _log_density(w, x, y):
    logits = x @ w
    likelihood = jnp.sum(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))
    return likelihood - 0.5 * jnp.sum(w**2)


def nuts_step(state, key, x, y):
    """One NUTS transition; how many leapfrog steps it takes depends on ``state``'s values."""
    kernel = blackjax.nuts(
        lambda w: _log_density(w, x, y),
        step_size=0.01,
        inverse_mass_matrix=jnp.ones(_FEATURES),
    )
    new_state, info = kernel.step(key, state)
    return new_state, info.num_integration_steps


def nuts_inputs():
    """A NUTS state near the posterior's mode, a PRNG key and the data."""
    x, y = _regression_data()

    def log_density(w):
        return _log_density(w, x, y)

    # A few hundred small gradient steps from zero: a state a warmed-up chain could be in.
    climb = jax.grad(log_density)
    position = jax.lax.fori_loop(0, 200, lambda _, w: w + 1e-3 * climb(w), jnp.zeros(_FEATURES))
    state = blackjax.nuts.init(position, log_density)
    return {"state": state, "key": jax.random.key(0), "x": x, "y": y}


# --- numpyro: one SVI step of Bayesian linear regression -----------------------------------


def _model(x, y=None):
    # One latent site beside the observation: the ELBO's terms come in one order whatever
    # Python's hash seed (numpyro orders several sites by iterating a set).
    w = numpyro.sample("w", dist.Normal(jnp.zeros(x.shape[1]), 1.0).to_event(1))
    numpyro.sample("obs", dist.Normal(x @ w, 1.0), obs=y)


_svi = SVI(_model, AutoNormal(_model), numpyro.optim.Adam(1e-2), Trace_ELBO())


def _svi_data():
    x, _ = _regression_data()
    return x, x @ jnp.arange(1.0, _FEATURES + 1.0)


# As numpyro's users do: `init` runs once, eagerly, and sets up the guide's prototype; run
# under the factory's abstract evaluation instead, the guide would keep traced values.
_svi_state = _svi.init(jax.random.key(2), *_svi_data())


def svi_step(svi_state, x, y):
    """One Adam step on the ELBO; returns the new state and the loss."""
    return _svi.update(svi_state, x, y)


def svi_inputs():
    """The SVI state after ``init`` and the data it fits."""
    x, y = _svi_data()
    return {"svi_state": _svi_state, "x": x, "y": y}
