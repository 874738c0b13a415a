"""The training script reaches the model class through the package, never naming equinox."""
import jax
import jax.numpy as jnp
import optax

import models

model = models.MLP(jax.random.PRNGKey(0))
optim = optax.adam(1e-3)
opt_state = optim.init(model)  # expect: ODL201
xs = jnp.ones((8, 2))
