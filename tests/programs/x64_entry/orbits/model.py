"""The orbit model: float64 on purpose, since train.py runs the program in 64-bit mode."""

import jax.numpy as jnp


def decay(times, amplitude, rate):
    times = jnp.asarray(times, dtype=jnp.float64)
    return amplitude * jnp.exp(-rate * times)
