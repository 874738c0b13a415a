"""Fine-tune a classifier head with weight decay: more optimiser mistakes for the demo."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax


def make_model(key):
    return eqx.nn.MLP(4, 3, 16, 2, key=key)


def cross_entropy(model, x, y):
    logits = jax.vmap(model)(x)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


def finetune(steps=20, seed=0):
    key_model, key_data = jax.random.split(jax.random.PRNGKey(seed))
    model = make_model(key_model)
    x = jax.random.normal(key_data, (64, 4))
    y = (x[:, 0] > 0).astype(jnp.int32) + (x[:, 1] > 0).astype(jnp.int32)
    optim = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-2, weight_decay=1e-4))
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, opt_state):
        value, grads = eqx.filter_value_and_grad(cross_entropy)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state)
        return optax.apply_updates(model, updates), opt_state, value

    first = None
    for _ in range(steps):
        model, opt_state, value = step(model, opt_state)
        first = value if first is None else first
    return float(first), float(value)


if __name__ == "__main__":
    start, end = finetune()
    print(f"loss {start:.4f} -> {end:.4f}")
