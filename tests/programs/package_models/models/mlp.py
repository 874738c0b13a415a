"""A model whose activation is a plain function field."""
import equinox as eqx
import jax

__all__ = ["MLP"]


class MLP(eqx.Module):
    layers: list
    activation: object

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Linear(2, 16, key=k1), eqx.nn.Linear(16, 1, key=k2)]
        self.activation = jax.nn.tanh

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)
