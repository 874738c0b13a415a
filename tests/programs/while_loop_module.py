"""equinox#768 style: a module with an array field given to lax.while_loop as its body."""
import equinox as eqx
import jax
import jax.numpy as jnp


class Relax(eqx.Module):
    rate: jax.Array

    def __call__(self, state):
        x, i = state
        return x * self.rate, i + 1


@jax.jit
def solve(rate, x0):
    body = Relax(rate)
    return jax.lax.while_loop(lambda s: s[1] < 10, body, (x0, 0))  # expect: ODL401


solve(jnp.array(0.5), jnp.ones(2))
