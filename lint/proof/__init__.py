"""Proving the rules under JAX: fixtures, `odelint confirm`, old-pin environments, doctor."""
