"""A lambda handed to filter_grad closes over a loss that logs through io_callback."""
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.experimental import io_callback


def loss(model, x):
    value = jnp.mean(model(x) ** 2)
    io_callback(lambda v: print("loss", v), None, value, ordered=True)  # expect: ODL301
    return value


model = eqx.nn.Linear(3, 1, key=jax.random.PRNGKey(0))
x = jnp.ones(3)
grads = eqx.filter_grad(lambda m: loss(m, x))(model)
