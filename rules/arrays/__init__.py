"""ODL7xx: JAX array semantics and randomness."""
