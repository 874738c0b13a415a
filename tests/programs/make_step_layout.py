"""The Equinox README layout, with optax's own apply_updates on the model."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


def loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


@eqx.filter_jit
def make_step(model, opt_state, x, y):
    grads = eqx.filter_grad(loss)(model, x, y)
    updates, opt_state = optim.update(grads, opt_state)
    model = optax.apply_updates(model, updates)  # expect: ODL204
    return model, opt_state


key = jax.random.PRNGKey(0)
model = eqx.nn.MLP(1, 1, 16, 2, key=key)
optim = optax.adam(1e-3)
opt_state = optim.init(eqx.filter(model, eqx.is_array))
x = jnp.linspace(0, 1, 32)[:, None]
model, opt_state = make_step(model, opt_state, x, jnp.sin(x))
