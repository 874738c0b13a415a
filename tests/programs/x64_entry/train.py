"""Fits the rate of a decaying orbit in 64-bit precision: the program switches x64 on first."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

from orbits.fit import fit_rate  # noqa: E402


def main() -> None:
    times = jnp.linspace(0.0, 10.0, 200)
    observed = 3.0 * jnp.exp(-0.25 * times)
    print(fit_rate(times, observed))


if __name__ == "__main__":
    main()
