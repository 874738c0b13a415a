"""odelint: a linter with autofixes for JAX, Equinox, Diffrax and Optax code.

Importing odelint never imports jax, equinox, diffrax or optax.
"""

__version__ = "0.1.0"
