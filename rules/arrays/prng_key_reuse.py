"""ODL704: a PRNG key drawn from twice, or a constant key made inside a loop."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, key_uses, source_of
from odelint.api.rule import UNFIXED, Flag, Pass, Rule


class PrngKeyReuse(Rule):
    """A PRNG key is consumed twice where the program treats the two draws as independent.

    ## What it does
    Flags a `jax.random` sampler or `split` (first argument or `key=`), a call given `key=` a
    PRNG key, or a function of the file given a key by position that it splits or draws
    from, when it receives a key that an earlier call already consumed with no new `split`
    in between, and the two uses are meant to be independent:
    - a key that was split into subkeys (or handed to a constructor that splits it) and is
      then used again: split again for the data or dropout (the data keys equal the init
      keys), `split(key, 3)` after `eqx.nn.MLP(..., key=key)`, the parent passed on after
      its subkeys were used;
    - two draws from one key, and the carry `key` drawn from after
      `key, sub = jax.random.split(key)` where `sub` was meant, then split again;
    - a key consumed on every iteration of a loop that repeats one computation (`while`,
      `range(n)`) without being re-split there, or of any loop (or comprehension) whose
      draws take their shape from the loop variable (`{k: normal(key, v.shape) for k, v in
      params.items()}`: each parameter, each layer gets the same numbers), and
      `jax.random.PRNGKey(0)` (constant arguments) made in a repeating loop and drawn from there.
    Not flagged, because the reuse is deliberate: the same key given to the same
    constructor twice (rebuilding a model identically, identical layers in a test); a key
    from outside drawn from and then split (the dataloader's `permutation(key)` then
    `split(key)`); any reuse in a test or a benchmark (correlated test inputs, fake
    benchmark data, tests that compare key derivations); one key for
    every case of a loop over configurations (common random numbers across evaluation
    conditions, one shape for all) or beside a key the loop splits afresh (a fixed sample
    key for plots); one permutation for several arrays (their rows stay aligned);
    a constant key handed to a function inside a loop (it may draw nothing from it);
    `fold_in(PRNGKey(0), i)`, a different key for every `i`; a draw whose value never meets
    the other, because it is only displayed or dropped (`print(jax.random.normal(key))`, a
    notebook cell's last line, a statement calling a function of the file that returns
    nothing, like a decoding step that only logs) or is overwritten before anything but
    `print` reads it (a notebook's `x = normal(key, (n, n))` timing inputs, one after the
    other); a key handed to a model whose randomness is switched off (`inference=True`,
    `deterministic=True`, `training=False`, `enable_dropout=False`, also through
    `vmap(partial(model, ...))`), which draws nothing from it. Uses in different branches of
    an `if`/`else` are not reuse.

    Strict mode, `strict-key-reuse = true` in `[tool.odelint]` (or
    `--config "strict-key-reuse = true"`), reports every reuse, deliberate ones included, as
    `jax.debug_key_reuse(True)` does at run time.

    ## Why is this bad?
    A key determines its random numbers: the same key gives the same (or, for different
    samplers, correlated) numbers, with no error. Dropout masks repeat, noise is the
    same every step, two "independent" initialisations are equal (jax-ml/jax#2009:
    "almost every single new use ... will incorrectly reuse the PRNG key"; blackjax#53;
    numpyro PR#263). `jax.debug_key_reuse(True)` reports it at run time as `KeyReuseError`.

    ## Example
    ```python
    w = jax.random.normal(key, (3,))
    b = jax.random.normal(key, (3,))
    ```

    ## Use instead
    ```python
    key, w_key, b_key = jax.random.split(key, 3)
    w = jax.random.normal(w_key, (3,))
    b = jax.random.normal(b_key, (3,))
    ```

    ## Fix safety
    No fix: any fix changes the random stream, and which key each use should get is the
    author's choice.
    """

    code = "ODL704"
    name = "prng-key-reuse"
    summary = "A PRNG key meant for independent draws is consumed twice, or a constant key is drawn from in a loop"
    triggers = (("random",), ("Key",))  # jax.random, or a key annotation (PRNGKeyArray, Key[...])
    fixtures = "tests/fixtures/ODL704"
    expected_errors = UNFIXED  # a silent wrong value, not the error the test expects

    # in a test or benchmark every reuse is deliberate (KeyUses.in_test): only strict mode reports it
    needs = Needs.fact("reused_key") & (Needs.setting("strict-key-reuse") | Needs.fact("not_a_test"))

    def visit_Module(self, node: cst.Module, site) -> None:
        uses = key_uses(self.facts)
        strict = "strict-key-reuse" in self.context.options
        for reuse in uses.reuses:
            if reuse.deliberate is not None and not strict:
                continue
            second = source_of(self.context.module, reuse.second.func)
            related: list[tuple[cst.CSTNode, str]] = []
            if reuse.in_loop and reuse.first is reuse.second:
                where = (f"the loop consumes the key `{reuse.name}` on every iteration without splitting it "
                         f"there: `{second}` gets the same key each time")
            else:
                first = source_of(self.context.module, reuse.first.func)
                later = " on a later loop iteration" if reuse.in_loop else ""
                where = f"`{second}` gets the key `{reuse.name}`{later} after `{first}` already consumed it"
                related.append((reuse.first, f"the key `{reuse.name}` was first used here, by `{first}`"))
            self.report(reuse.second, f"{where}; the same key gives the same random numbers: give each use its "
                                      f"own key from `jax.random.split({reuse.name})`", related=related)
        for call in uses.constant_keys_in_loops:
            if not strict and (id(call) not in uses.drawn_constant_keys or uses.in_test):
                continue  # handed to a function that may draw nothing from it (a carry initialiser), or a test
            text = source_of(self.context.module, call)
            self.report(call, f"`{text}` inside a loop makes the same key on every iteration, so every "
                              f"iteration draws the same numbers: make one key before the loop and split it")

    examples = (
        Flag("""
            import jax

            key = jax.random.PRNGKey(0)
            w = jax.random.normal(key, (3,))
            b = jax.random.normal(key, (3,))
        """, message="`jax.random.normal` gets the key `key` after `jax.random.normal` already consumed it",
            span="5:5-5:33"),
        # `key` used where `sub` was meant, then split again; a key=; a loop without a split
        Flag("""
            import equinox as eqx
            import jax.random as jr

            def init(key):
                key, sub = jr.split(key)
                w = jr.uniform(key, (2,))
                key, sub = jr.split(key)
                layer = eqx.nn.Linear(2, 2, key=sub)
                noise = jr.normal(key=sub, shape=(2,))
                return w, layer, noise

            def noisy(key, xs):
                out = []
                for x in xs:
                    out.append(x + jr.normal(key, ()))
                return out, [jr.bernoulli(key) for _ in xs]
        """, count=3, message="`jr.split` gets the key `key` after `jr.uniform` already consumed it",
            span=("7:16-7:29", "9:13-9:43", "16:18-16:35")),
        # a constant key in a loop
        Flag("""
            import jax

            def sample(n):
                total = 0.0
                for i in range(n):
                    key = jax.random.PRNGKey(0)
                    total += jax.random.normal(key)
                return total
        """, message="`jax.random.PRNGKey(0)` inside a loop makes the same key on every iteration", span="6:15-6:36"),
        # split before reuse, branches, loops that split, fold_in, keys from split arrays
        Pass("""
            import jax

            def step(key, x, training):
                key, sub = jax.random.split(key)
                x = x + jax.random.normal(sub, x.shape)
                if training:
                    y = jax.random.bernoulli(key)
                else:
                    y = jax.random.uniform(key)
                return x, y

            def walk(key, n):
                xs = []
                for i in range(n):
                    key, sub = jax.random.split(key)
                    xs.append(jax.random.normal(sub))
                    xs.append(jax.random.normal(jax.random.fold_in(key, i)))
                keys = jax.random.split(key, n)
                return xs, [jax.random.normal(k) for k in keys]

            def early(key, flag):
                if flag:
                    return jax.random.normal(key)
                return jax.random.uniform(key)
        """),
        # one fixed root key folded with the loop index: a different key every iteration (blackjax)
        Pass("""
            import jax

            def chains(n):
                return [jax.random.normal(jax.random.fold_in(jax.random.key(999), m), (3,)) for m in range(n)]
        """),
        # a key split for initialisation, then split again for the data: the data keys equal the init keys
        Flag("""
            import equinox as eqx
            import jax

            def make(key, n):
                init_keys = jax.random.split(key, 2)
                encoder = eqx.nn.Linear(4, 8, key=init_keys[0])
                decoder = eqx.nn.Linear(8, 4, key=init_keys[1])
                data_keys = jax.random.split(key, n)
                xs = jax.vmap(lambda k: jax.random.normal(k, (4,)))(data_keys)
                return encoder, decoder, xs
        """, message="`jax.random.split` gets the key `key` after `jax.random.split` already consumed it",
            span="8:17-8:41"),
        # `split(key, 3)` after a constructor that split the same key internally
        Flag("""
            import equinox as eqx
            import jax.random as jr

            class Classifier(eqx.Module):
                body: eqx.nn.MLP
                head: eqx.nn.Linear

                def __init__(self, key):
                    self.body = eqx.nn.MLP(16, 32, 64, 2, key=key)
                    k1, k2, k3 = jr.split(key, 3)
                    self.head = eqx.nn.Linear(32, 10, key=k1)
        """, message="`jr.split` gets the key `key` after `eqx.nn.MLP", span="10:22-10:38"),
        # the parent key passed on, by position, after it was split into subkeys
        Flag("""
            import jax

            def train(params, key, steps):
                for step in range(steps):
                    noise = jax.random.normal(jax.random.fold_in(key, step), params.shape)
                    params = params - 0.1 * noise
                return params

            def main(key):
                init_key, data_key = jax.random.split(key)
                params = jax.random.normal(init_key, (3,))
                return train(params, key, 100)
        """, message="`train` gets the key `key` after `jax.random.split` already consumed it", span="12:12-12:35"),
        # deliberate: the same key rebuilds the model identically (a serialisation round trip)
        Pass("""
            import equinox as eqx
            import jax

            def test_roundtrip(tmp_path):
                key = jax.random.PRNGKey(0)
                model = eqx.nn.MLP(2, 2, 8, 2, key=key)
                eqx.tree_serialise_leaves(tmp_path / "model.eqx", model)
                skeleton = eqx.nn.MLP(2, 2, 8, 2, key=key)
                restored = eqx.tree_deserialise_leaves(tmp_path / "model.eqx", skeleton)
                assert eqx.tree_equal(model, restored)
        """),
        # a loop over parameters or layers whose draws take their shape from the loop variable:
        # each entry is a different object, so the entries are meant to be independent
        Flag("""
            import jax
            import jax.numpy as jnp

            def independent_proposal(positions, scale):
                def propose(key):
                    return {name: scale * jax.random.normal(key, jnp.shape(value))
                            for name, value in positions.items()}
                return propose

            def init_mlp(key, sizes):
                params = []
                for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
                    params.append(jax.random.normal(key, (fan_in, fan_out)) / jnp.sqrt(fan_in))
                return params
        """, count=2, message="the loop consumes the key `key` on every iteration without splitting it there",
            span=("6:31-6:71", "13:23-13:64")),
        # deliberate: one permutation for every array, so their rows stay aligned
        Pass("""
            import jax.random as jr

            def shuffle_together(key, arrays):
                return [jr.permutation(key, array) for array in arrays]
        """),
        # deliberate: common random numbers across evaluation conditions
        Pass("""
            import jax
            import jax.numpy as jnp

            def robustness(model, x, noise_levels, key):
                losses = []
                for sigma in noise_levels:
                    noisy = x + sigma * jax.random.normal(key, x.shape)
                    losses.append(jnp.mean((model(noisy) - model(x)) ** 2))
                return losses
        """),
        # deliberate: identical layers in a test, and test inputs drawn from one key
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def test_shared_weights_give_equal_outputs():
                key = jax.random.PRNGKey(0)
                left = eqx.nn.Linear(3, 3, key=key)
                right = eqx.nn.Linear(3, 3, key=key)
                x = jax.random.normal(key, (3,))
                y = jax.random.normal(key, (3,))
                assert jnp.allclose(left(x), right(y))
        """, filename="test_layers.py"),
        # deliberate: a fixed sample key so the plots after every epoch are comparable
        Pass("""
            import jax

            def fit(model, step, data, key, epochs):
                sample_key = jax.random.PRNGKey(42)
                figures = []
                for epoch in range(epochs):
                    key, batch_key = jax.random.split(key)
                    model = step(model, data, batch_key)
                    figures.append(model.sample(key=sample_key))
                return model, figures
        """),
        # deliberate: the dataloader permutes with the key it was given, then splits it
        Pass("""
            import jax.random as jr

            def as_batches(rng_key, data, split=0.9):
                idxs = jr.permutation(rng_key, data.shape[0])
                data = data[idxs]
                n_train = int(split * data.shape[0])
                train_key, val_key = jr.split(rng_key)
                return (train_key, data[:n_train]), (val_key, data[n_train:])
        """),
        # a draw only printed, then a new timing input in its place: no two draws ever meet;
        # evaluation that only logs what it decodes shares the training key harmlessly
        Pass("""
            import jax
            import jax.numpy as jnp

            key = jax.random.PRNGKey(0)
            print(jax.random.normal(key, (3,)))
            x = jax.random.normal(key, (10,))
            print(x)
            x = jax.random.normal(key, (3000, 3000))
            y = jnp.dot(x, x.T).block_until_ready()

            def train_step(model, batch, key):
                noise = jax.random.normal(jax.random.fold_in(key, model.step), batch.shape)
                return model.update(batch + noise)

            def decode_batch(model, batch, key):
                tokens = model.sample(batch, key=jax.random.fold_in(key, model.step))
                print(tokens)

            def train(model, batches, key):
                for batch in batches:
                    model = train_step(model, batch, key)
                    decode_batch(model, batch, key)
                return model
        """),
        # a key handed to a model whose randomness is switched off draws nothing from it
        Pass("""
            import functools

            import equinox as eqx
            import jax
            import jax.numpy as jnp
            import jax.random as jr

            class Classifier(eqx.Module):
                dropout: eqx.nn.Dropout
                linear: eqx.nn.Linear

                def __init__(self, key):
                    self.dropout = eqx.nn.Dropout(0.1)
                    self.linear = eqx.nn.Linear(8, 2, key=key)

                def __call__(self, x, enable_dropout, key):
                    return self.linear(self.dropout(x, inference=not enable_dropout, key=key))

            def accuracy(images, labels):
                key = jr.PRNGKey(0)
                model = Classifier(key=key)
                logits = jax.vmap(functools.partial(model, enable_dropout=False))(
                    images, key=jr.split(key, len(images)))
                return jnp.mean(jnp.argmax(logits, axis=-1) == labels)
        """),
        # only what meets counts: a printed draw does not hide the two draws that do meet
        Flag("""
            import jax

            key = jax.random.PRNGKey(0)
            print(jax.random.normal(key, (3,)))
            w = jax.random.normal(key, (3, 3))
            b = jax.random.normal(key, (3,))
            y = w @ b
        """, message="`jax.random.normal` gets the key `key` after `jax.random.normal` already consumed it",
            span="6:5-6:33"),
        # a constant key handed to a method in a loop over rounds: the callee decides what it draws
        Pass("""
            import jax.random as jr

            def test_rounds(estimator, observed):
                data, params = None, {}
                for _ in range(2):
                    data = estimator.simulate(jr.PRNGKey(1), observed, data=data)
                    params = estimator.fit(jr.PRNGKey(2), data=data)
                return params
        """),
    )
