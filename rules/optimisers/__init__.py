"""ODL2xx: optax optimisers used with Equinox modules."""
