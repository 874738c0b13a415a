"""odelint: a linter with autofixes for JAX, Equinox, Diffrax and Optax code.

Importing odelint never imports jax, equinox, diffrax or optax.
"""

from odelint.engine.deferred import defer

__version__ = "0.1.0"

defer("libcst")
