"""Gauss-Newton on the decay rate; the finite-difference step needs 64-bit arithmetic."""

import jax
import jax.numpy as jnp

from orbits.model import decay


def fit_rate(times, observed, steps=20):
    rate = jnp.array(0.1, dtype=jnp.float64)
    amplitude = observed[0]
    for _ in range(steps):
        residual = decay(times, amplitude, rate) - observed
        slope = (decay(times, amplitude, rate + 1e-9) - decay(times, amplitude, rate)) / 1e-9
        rate = rate - jnp.vdot(slope, residual) / jnp.vdot(slope, slope)
    return jax.device_get(rate)
