"""An ensemble stores `jax.vmap(...)` of a layer: filtering would silently drop its weights."""
import equinox as eqx
import jax
import optax


class Ensemble(eqx.Module):
    heads: object
    trunk: eqx.nn.Linear

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.trunk = eqx.nn.Linear(8, 8, key=k1)
        self.heads = jax.vmap(eqx.nn.Linear(8, 1, key=k2))


ensemble = Ensemble(jax.random.PRNGKey(0))
state = optax.adam(1e-3).init(ensemble)  # expect: ODL201
