"""Arguments through *args: nothing is known about them, so nothing is claimed."""
import equinox as eqx
import jax
import optax

optim = optax.adam(1e-3)


def init_all(*trees):
    return [optim.init(tree) for tree in trees]


def build(key):
    return eqx.filter(eqx.nn.MLP(2, 2, 8, 2, key=key), eqx.is_array)


states = init_all(build(jax.random.PRNGKey(0)))
