"""A network built as `eqx.nn.Sequential` of layers: a bare activation function (or one
wrapped in `eqx.nn.Lambda`) among the layers is a function leaf of the model."""
import equinox as eqx
import jax
import optax

key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)

net = eqx.nn.Sequential([
    eqx.nn.Linear(2, 32, key=k1),
    eqx.nn.Lambda(jax.nn.tanh),
    eqx.nn.Linear(32, 1, key=k2),
])
optim = optax.adamw(1e-3)
state = optim.init(net)  # expect: ODL201

linear_net = eqx.nn.Sequential([eqx.nn.Linear(2, 32, key=k1), eqx.nn.Linear(32, 1, key=k2)])
linear_state = optim.init(linear_net)
filtered_state = optim.init(eqx.filter(net, eqx.is_array))
