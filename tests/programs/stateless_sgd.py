"""Plain SGD keeps no state per parameter: init on the whole MLP works."""
import equinox as eqx
import jax
import optax

model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))
plain = optax.sgd(1e-2)
state = plain.init(model)
clipped = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(1e-2))
state2 = clipped.init(model)
with_momentum = optax.sgd(1e-2, momentum=0.9)
state3 = with_momentum.init(model)  # expect: ODL201
