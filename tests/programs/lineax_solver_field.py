"""A module keeps a lineax solver as a field: CG's `norm` is a function leaf."""
import equinox as eqx
import jax
import lineax as lx
import optax


class ImplicitLayer(eqx.Module):
    linear: eqx.nn.Linear
    solver: lx.CG

    def __init__(self, key):
        self.linear = eqx.nn.Linear(4, 4, key=key)
        self.solver = lx.CG(rtol=1e-5, atol=1e-5)


layer = ImplicitLayer(jax.random.PRNGKey(0))
opt_state = optax.rmsprop(1e-3).init(layer)  # expect: ODL201
