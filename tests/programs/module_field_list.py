"""A module whose fields are a list of layers and an activation function."""
from typing import Callable

import equinox as eqx
import jax
import optax


class ResNet(eqx.Module):
    blocks: list
    act: Callable

    def __init__(self, key):
        keys = jax.random.split(key, 3)
        self.blocks = [eqx.nn.Linear(8, 8, key=k) for k in keys]
        self.act = jax.nn.gelu

    def __call__(self, x):
        for block in self.blocks:
            x = x + self.act(block(x))
        return x


net = ResNet(jax.random.PRNGKey(0))
state = optax.lion(1e-4).init(net)  # expect: ODL201
