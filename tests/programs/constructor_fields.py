"""A module built around another one passed to its constructor: the field holds what the
call passes (`Wrapper(eqx.nn.MLP(...))`), function leaves included."""
import equinox as eqx
import jax
import optax


class Wrapper(eqx.Module):
    inner: eqx.Module
    scale: float

    def __init__(self, inner, scale=1.0):
        self.inner = inner
        self.scale = scale

    def __call__(self, x):
        return self.scale * self.inner(x)


class Residual(eqx.Module):
    block: eqx.Module

    def __init__(self, block):
        self.block = block

    def __call__(self, x):
        return x + self.block(x)


key = jax.random.PRNGKey(0)
model = Wrapper(eqx.nn.MLP(2, 2, 16, 2, key=key))
optim = optax.adam(1e-3)
opt_state = optim.init(eqx.filter(model, eqx.is_array))
bad_state = optim.init(model)  # expect: ODL201

residual = Residual(eqx.nn.Linear(2, 2, key=key))
residual_state = optim.init(residual)
