"""An ensemble kept in a list: what indexing or iterating takes out of the list is the module
the list holds, function leaves included."""
import equinox as eqx
import jax
import optax

keys = jax.random.split(jax.random.PRNGKey(0), 4)
ensemble = [eqx.nn.MLP(3, 1, 32, 2, key=k) for k in keys]
heads = [eqx.nn.Linear(32, 1, key=k) for k in keys]
optim = optax.adam(1e-3)

first_state = optim.init(ensemble[0])  # expect: ODL201
states = []
for member in ensemble:
    states.append(optim.init(member))  # expect: ODL201

head_states = [optim.init(head) for head in heads]
filtered = [optim.init(eqx.filter(member, eqx.is_array)) for member in ensemble]
