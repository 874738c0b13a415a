"""A factory returns the model, the optimiser and its state; the step unpacks them."""
import equinox as eqx
import jax
import optax


def make(key):
    model = eqx.nn.MLP(4, 1, 64, 2, key=key)
    optim = optax.adamw(3e-4, weight_decay=1e-4)
    return model, optim, optim.init(model)  # expect: ODL201


def step(net, opt, state, x, y):
    grads = eqx.filter_grad(lambda m: ((jax.vmap(m)(x) - y) ** 2).mean())(net)
    updates, state = opt.update(grads, state)  # expect: ODL203
    return eqx.apply_updates(net, updates), state


net, opt, state = make(jax.random.PRNGKey(1))
net, state = step(net, opt, state, None, None)
