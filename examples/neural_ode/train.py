"""Fit a small neural ODE to a damped oscillator: the bundled odelint demo.

It runs under JAX (`python examples/neural_ode/train.py`), but has the optimiser
mistakes odelint reports; `odelint check --fix` repairs them.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class VectorField(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(2, 2, 32, 2, activation=jax.nn.softplus, key=key)

    def __call__(self, t, y, args):
        return self.mlp(y)


class NeuralODE(eqx.Module):
    field: VectorField
    controller: diffrax.PIDController

    def __init__(self, key):
        self.field = VectorField(key)
        self.controller = diffrax.PIDController(rtol=1e-3, atol=1e-6)

    def __call__(self, ts, y0):
        solution = diffrax.diffeqsolve(
            diffrax.ODETerm(self.field), diffrax.Tsit5(), ts[0], ts[-1], ts[1] - ts[0], y0,
            stepsize_controller=self.controller, saveat=diffrax.SaveAt(ts=ts),
        )
        return solution.ys


def data():
    ts = jnp.linspace(0.0, 2.0, 16)
    ys = jnp.stack([jnp.exp(-0.3 * ts) * jnp.cos(ts), -jnp.exp(-0.3 * ts) * jnp.sin(ts)], axis=-1)
    return ts, ys


def loss(model, ts, ys):
    return jnp.mean((model(ts, ys[0]) - ys) ** 2)


def train(steps=30, seed=0):
    ts, ys = data()
    model = NeuralODE(jax.random.PRNGKey(seed))
    optim = optax.MultiSteps(optax.adamw(3e-3), every_k_schedule=2)
    opt_state = optim.init(model)

    @eqx.filter_jit
    def make_step(model, opt_state):
        value, grads = eqx.filter_value_and_grad(loss)(model, ts, ys)
        updates, opt_state = optim.update(grads, opt_state, model)
        model = eqx.apply_updates(model, updates)
        return model, opt_state, value

    first = None
    for _ in range(steps):
        model, opt_state, value = make_step(model, opt_state)
        first = value if first is None else first
    return float(first), float(value)


if __name__ == "__main__":
    start, end = train()
    print(f"loss {start:.4f} -> {end:.4f}")
