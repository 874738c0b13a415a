"""Modules whose leaves are all arrays: optax handles them whole, nothing to report."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class Affine(eqx.Module):
    weight: jax.Array
    bias: jax.Array
    scale: float

    def __call__(self, x):
        return self.scale * (self.weight @ x + self.bias)


key = jax.random.PRNGKey(0)
affine = Affine(jnp.eye(2), jnp.zeros(2), 1.0)
linear = eqx.nn.Linear(2, 2, key=key)
optim = optax.adam(1e-2)
s1 = optim.init(affine)
s2 = optim.init(linear)
grads = eqx.filter_grad(lambda m: jnp.sum(m(jnp.ones(2))))(affine)
updates, s1 = optim.update(grads, s1, affine)
affine = optax.apply_updates(affine, updates)
