"""equinox#745 style: a module passed through nondiff_argnums, via functools.partial."""
from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp


class Drift(eqx.Module):
    w: jax.Array

    def __call__(self, y):
        return jnp.sin(self.w * y)


@partial(jax.custom_jvp, nondiff_argnums=(0,))  # expect: ODL101
def integrate(f, y):
    return y + 0.1 * f(y)


@integrate.defjvp
def integrate_jvp(f, primals, tangents):
    (y,), (ty,) = primals, tangents
    out, tout = jax.jvp(lambda v: v + 0.1 * f(v), (y,), (ty,))
    return out, tout


@jax.jit
def rollout(w, y0):
    drift = Drift(w)

    def body(y, _):
        return integrate(drift, y), y

    return jax.lax.scan(body, y0, None, length=5)[0]


print(jax.grad(rollout)(jnp.ones(3), jnp.ones(3)))
