"""A policy module picks one of its own methods with `lax.switch`, the branches kept in a list
first: each bound method is a module, hashed by `switch`."""
import equinox as eqx
import jax
import jax.numpy as jnp


class Policy(eqx.Module):
    weights: jax.Array

    def explore(self, x):
        return x + self.weights

    def exploit(self, x):
        return x * self.weights

    def __call__(self, mode, x):
        branches = [self.explore,  # expect: ODL401
                    self.exploit]  # expect: ODL401
        return jax.lax.switch(mode, branches, x)


def explore(x):
    return x + 1.0


def exploit(x):
    return x * 2.0


def act(mode, x):
    branches = [explore, exploit]
    return jax.lax.switch(mode, branches, x)


policy = Policy(jnp.ones(3))
print(jax.jit(policy)(0, jnp.ones(3)), act(1, jnp.ones(3)))
