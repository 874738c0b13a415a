"""Fields annotated with a base type (`eqx.Module`, an abstract base of the project) hold the
concrete module `__init__` assigns: its function leaves reach optax's `init` all the same."""
import equinox as eqx
import jax
import optax


class AbstractDecoder(eqx.Module):
    def __call__(self, z):
        raise NotImplementedError


class MLPDecoder(AbstractDecoder):
    mlp: eqx.nn.MLP

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(2, 4, 16, 2, key=key)

    def __call__(self, z):
        return self.mlp(z)


class LinearDecoder(AbstractDecoder):
    linear: eqx.nn.Linear

    def __init__(self, key):
        self.linear = eqx.nn.Linear(2, 4, key=key)

    def __call__(self, z):
        return self.linear(z)


class AutoEncoder(eqx.Module):
    encoder: eqx.Module
    decoder: AbstractDecoder

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.encoder = eqx.nn.MLP(4, 2, 16, 2, key=k1)
        self.decoder = MLPDecoder(k2)


class LinearAutoEncoder(eqx.Module):
    encoder: eqx.Module
    decoder: AbstractDecoder

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.encoder = eqx.nn.Linear(4, 2, key=k1)
        self.decoder = LinearDecoder(k2)


model = AutoEncoder(jax.random.PRNGKey(0))
optim = optax.adam(1e-3)
opt_state = optim.init(model)  # expect: ODL201

linear = LinearAutoEncoder(jax.random.PRNGKey(1))
linear_state = optim.init(linear)
