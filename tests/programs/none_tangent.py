"""A filter_custom_jvp rule multiplies a tangent that is None when beta is not differentiated."""
import equinox as eqx
import jax
import jax.numpy as jnp


@eqx.filter_custom_jvp
def scaled_tanh(x, beta):
    return jnp.tanh(beta * x)


@scaled_tanh.def_jvp
def scaled_tanh_jvp(primals, tangents):
    (x, beta), (tx, tbeta) = primals, tangents
    out = scaled_tanh(x, beta)
    d = 1 - out ** 2
    return out, d * beta * tx + d * x * tbeta  # expect: ODL102


print(jax.grad(lambda x: scaled_tanh(x, 2.0))(0.3))
