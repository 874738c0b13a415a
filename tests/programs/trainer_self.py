"""A trainer object keeps the model on `self` and initialises the optimiser in a method."""
import equinox as eqx
import jax
import optax


class Trainer:
    model: eqx.nn.MLP

    def __init__(self, key, lr):
        self.model = eqx.nn.MLP(3, 3, 32, 3, key=key)
        self.optim = optax.adabelief(lr)

    def start(self):
        self.state = self.optim.init(self.model)  # expect: ODL201
        return self.state


Trainer(jax.random.PRNGKey(0), 1e-3).start()
