"""The training half: the model class comes from model.py."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from model import NeuralODE

model = NeuralODE(jax.random.PRNGKey(0))
optim = optax.MultiSteps(optax.adam(1e-3), every_k_schedule=4)
opt_state = optim.init(model)  # expect: ODL201


@eqx.filter_jit
def make_step(model, opt_state, ts, ys):
    loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((m(ts, ys[0]) - ys) ** 2))(model)
    updates, opt_state = optim.update(grads, opt_state, model)  # expect: ODL202
    return eqx.apply_updates(model, updates), opt_state, loss


ts = jnp.linspace(0.0, 1.0, 10)
ys = jnp.ones((10, 2))
for _ in range(3):
    model, opt_state, loss = make_step(model, opt_state, ts, ys)
