"""Differentiating a solve with respect to its end time while a progress meter runs."""
import diffrax
import jax
import jax.numpy as jnp

term = diffrax.ODETerm(lambda t, y, args: -args * y)


def final_state(t1, rate):
    sol = diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, t1, 0.01, jnp.ones(2), args=rate,
                              progress_meter=diffrax.TqdmProgressMeter())  # expect: ODL302
    return sol.ys[-1].sum()


print(jax.grad(final_state)(1.0, 0.5))
