"""A scientist's training script: latent neural ODEs, a normalising flow head and a CNF
baseline on synthetic oscillator data, written with JAX, Equinox, Diffrax and Optax.

This is the editor benchmark's buffer (bench/editor_server.py): real training code of the
shape users keep open all day, with a few of the mistakes odelint exists to catch left in
on purpose, so every rule's gate opens and diagnostics are not empty. It is never run.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools as ft
import json
import math
import os
import pathlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import optax
from jax import lax
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree

# ----------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DataConfig:
    dataset_size: int = 256
    length: int = 100
    t_end: float = 10.0
    noise: float = 0.05
    add_noise: bool = True


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    data_size: int = 2
    hidden_size: int = 64
    latent_size: int = 16
    width_size: int = 64
    depth: int = 2
    flow_layers: int = 4
    activation: str = "softplus"


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    batch_size: int = 32
    lr_strategy: tuple[float, ...] = (3e-3, 3e-3)
    steps_strategy: tuple[int, ...] = (500, 500)
    length_strategy: tuple[float, ...] = (0.1, 1.0)
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    print_every: int = 100
    eval_every: int = 250
    seed: int = 5678
    checkpoint_dir: str = "checkpoints"


@dataclasses.dataclass(frozen=True)
class Config:
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset-size", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--latent-size", type=int, default=16)
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=5678)
    parser.add_argument("--checkpoint-dir", default="checkpoints")
    args = parser.parse_args(argv)
    return Config(
        data=DataConfig(dataset_size=args.dataset_size),
        model=ModelConfig(latent_size=args.latent_size, hidden_size=args.hidden_size),
        train=TrainConfig(
            batch_size=args.batch_size,
            lr_strategy=(args.lr, args.lr),
            steps_strategy=(args.steps, args.steps),
            seed=args.seed,
            checkpoint_dir=args.checkpoint_dir,
        ),
    )


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "softplus": jax.nn.softplus,
    "tanh": jnp.tanh,
    "relu": jax.nn.relu,
    "gelu": jax.nn.gelu,
}

# ----------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------


def _oscillator(t: Array, y: Array, args: tuple[float, float]) -> Array:
    damping, frequency = args
    position, velocity = y
    return jnp.stack([velocity, -frequency**2 * position - damping * velocity])


def simulate_trajectory(y0: Array, ts: Array, damping: float, frequency: float) -> Array:
    term = diffrax.ODETerm(_oscillator)
    solver = diffrax.Tsit5()
    saveat = diffrax.SaveAt(ts=ts)
    controller = diffrax.PIDController(rtol=1e-6, atol=1e-6)
    solution = diffrax.diffeqsolve(
        term,
        solver,
        t0=ts[0],
        t1=ts[-1],
        dt0=0.1,
        y0=y0,
        args=(damping, frequency),
        saveat=saveat,
        stepsize_controller=controller,
    )
    return solution.ys


def make_dataset(config: DataConfig, *, key: PRNGKeyArray) -> tuple[Array, Array]:
    ts = jnp.linspace(0.0, config.t_end, config.length)
    y0_key, param_key, noise_key = jr.split(key, 3)
    y0 = jr.normal(y0_key, (config.dataset_size, 2))
    damping = jr.uniform(param_key, (config.dataset_size,), minval=0.05, maxval=0.3)
    frequency = jr.uniform(param_key, (config.dataset_size,), minval=0.5, maxval=2.0)
    ys = jax.vmap(simulate_trajectory, in_axes=(0, None, 0, 0))(y0, ts, damping, frequency)
    if config.add_noise:
        ys = ys + config.noise * jr.normal(noise_key, ys.shape)
    ts = jnp.broadcast_to(ts, (config.dataset_size, config.length))
    return ts, ys


def normalise(ys: Array) -> tuple[Array, Array, Array]:
    mean = jnp.mean(ys, axis=(0, 1), keepdims=True)
    std = jnp.std(ys, axis=(0, 1), keepdims=True)
    return (ys - mean) / std, mean, std


def dataloader(arrays: Sequence[Array], batch_size: int, *, key: PRNGKeyArray) -> Iterator[tuple[Array, ...]]:
    dataset_size = arrays[0].shape[0]
    assert all(array.shape[0] == dataset_size for array in arrays)
    indices = jnp.arange(dataset_size)
    while True:
        perm = jr.permutation(key, indices)
        (key,) = jr.split(key, 1)
        start = 0
        end = batch_size
        while end < dataset_size:
            batch_perm = perm[start:end]
            yield tuple(array[batch_perm] for array in arrays)
            start = end
            end = start + batch_size


def train_test_split(ts: Array, ys: Array, fraction: float = 0.8) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
    cut = int(fraction * ts.shape[0])
    return (ts[:cut], ys[:cut]), (ts[cut:], ys[cut:])


# ----------------------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------------------


class Func(eqx.Module):
    """The vector field of the latent ODE: an MLP with a bounded output."""

    scale: Array
    mlp: eqx.nn.MLP

    def __init__(self, data_size: int, width_size: int, depth: int, *, key: PRNGKeyArray, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scale = jnp.ones(())
        self.mlp = eqx.nn.MLP(
            in_size=data_size,
            out_size=data_size,
            width_size=width_size,
            depth=depth,
            activation=jax.nn.softplus,
            final_activation=jnp.tanh,
            key=key,
        )

    def __call__(self, t: Float[Array, ""], y: Float[Array, " d"], args: Any) -> Float[Array, " d"]:
        return self.scale * self.mlp(y)


class NeuralODE(eqx.Module):
    func: Func
    rtol: float = eqx.field(static=True, default=1e-3)
    atol: float = eqx.field(static=True, default=1e-6)

    def __init__(self, data_size: int, width_size: int, depth: int, *, key: PRNGKeyArray, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.func = Func(data_size, width_size, depth, key=key)

    def __call__(self, ts: Float[Array, " t"], y0: Float[Array, " d"]) -> Float[Array, "t d"]:
        solution = diffrax.diffeqsolve(
            diffrax.ODETerm(self.func),
            diffrax.Tsit5(),
            t0=ts[0],
            t1=ts[-1],
            dt0=ts[1] - ts[0],
            y0=y0,
            stepsize_controller=diffrax.PIDController(rtol=self.rtol, atol=self.atol),
            saveat=diffrax.SaveAt(ts=ts),
        )
        return solution.ys


class LatentFunc(eqx.Module):
    scale: Array
    mlp: eqx.nn.MLP

    def __call__(self, t: Array, y: Array, args: Any) -> Array:
        return self.scale * self.mlp(y)


class LatentODE(eqx.Module):
    func: LatentFunc
    rnn_cell: eqx.nn.GRUCell
    hidden_to_latent: eqx.nn.Linear
    latent_to_hidden: eqx.nn.MLP
    hidden_to_data: eqx.nn.Linear
    hidden_size: int
    latent_size: int

    def __init__(
        self, *, data_size: int, hidden_size: int, latent_size: int, width_size: int, depth: int, key: PRNGKeyArray,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        mkey, gkey, hlkey, lhkey, hdkey = jr.split(key, 5)
        scale = jnp.ones(())
        mlp = eqx.nn.MLP(
            in_size=hidden_size,
            out_size=hidden_size,
            width_size=width_size,
            depth=depth,
            activation=jax.nn.softplus,
            final_activation=jax.nn.tanh,
            key=mkey,
        )
        self.func = LatentFunc(scale, mlp)
        self.rnn_cell = eqx.nn.GRUCell(data_size + 1, hidden_size, key=gkey)
        self.hidden_to_latent = eqx.nn.Linear(hidden_size, 2 * latent_size, key=hlkey)
        self.latent_to_hidden = eqx.nn.MLP(latent_size, hidden_size, width_size=width_size, depth=depth, key=lhkey)
        self.hidden_to_data = eqx.nn.Linear(hidden_size, data_size, key=hdkey)
        self.hidden_size = hidden_size
        self.latent_size = latent_size

    def _latent(self, ts: Array, ys: Array, key: PRNGKeyArray) -> tuple[Array, Array, Array]:
        data = jnp.concatenate([ts[:, None], ys], axis=1)
        hidden = jnp.zeros((self.hidden_size,))
        for data_i in reversed(data):
            hidden = self.rnn_cell(data_i, hidden)
        context = self.hidden_to_latent(hidden)
        mean, logstd = context[: self.latent_size], context[self.latent_size :]
        std = jnp.exp(logstd)
        latent = mean + jr.normal(key, (self.latent_size,)) * std
        return latent, mean, std

    def _sample(self, ts: Array, latent: Array) -> Array:
        dt0 = 0.4
        y0 = self.latent_to_hidden(latent)
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(self.func),
            diffrax.Tsit5(),
            ts[0],
            ts[-1],
            dt0,
            y0,
            saveat=diffrax.SaveAt(ts=ts),
        )
        return jax.vmap(self.hidden_to_data)(sol.ys)

    @staticmethod
    def _loss(ys: Array, pred_ys: Array, mean: Array, std: Array) -> Array:
        reconstruction_loss = 0.5 * jnp.sum((ys - pred_ys) ** 2)
        variational_loss = 0.5 * jnp.sum(mean**2 + std**2 - 2 * jnp.log(std) - 1)
        return reconstruction_loss + variational_loss

    def train(self, ts: Array, ys: Array, *, key: PRNGKeyArray) -> Array:
        latent, mean, std = self._latent(ts, ys, key)
        pred_ys = self._sample(ts, latent)
        return self._loss(ys, pred_ys, mean, std)

    def sample(self, ts: Array, *, key: PRNGKeyArray) -> Array:
        latent = jr.normal(key, (self.latent_size,))
        return self._sample(ts, latent)


class Affine(eqx.Module):
    loc: Array
    log_scale: Array

    def __init__(self, dim: int) -> None:
        self.loc = jnp.zeros(dim)
        self.log_scale = jnp.zeros(dim)

    def forward(self, x: Array) -> tuple[Array, Array]:
        return x * jnp.exp(self.log_scale) + self.loc, jnp.sum(self.log_scale)

    def inverse(self, y: Array) -> tuple[Array, Array]:
        return (y - self.loc) * jnp.exp(-self.log_scale), -jnp.sum(self.log_scale)


class Coupling(eqx.Module):
    conditioner: eqx.nn.MLP
    split: int = eqx.field(static=True)
    flip: bool = eqx.field(static=True)

    def __init__(self, dim: int, width: int, depth: int, flip: bool, *, key: PRNGKeyArray) -> None:
        self.split = dim // 2
        self.flip = flip
        self.conditioner = eqx.nn.MLP(self.split, 2 * (dim - self.split), width, depth, key=key)

    def _halves(self, x: Array) -> tuple[Array, Array]:
        x = x[::-1] if self.flip else x
        return x[: self.split], x[self.split :]

    def _join(self, a: Array, b: Array) -> Array:
        x = jnp.concatenate([a, b])
        return x[::-1] if self.flip else x

    def forward(self, x: Array) -> tuple[Array, Array]:
        a, b = self._halves(x)
        shift, log_scale = jnp.split(self.conditioner(a), 2)
        log_scale = jnp.tanh(log_scale)
        return self._join(a, b * jnp.exp(log_scale) + shift), jnp.sum(log_scale)

    def inverse(self, y: Array) -> tuple[Array, Array]:
        a, b = self._halves(y)
        shift, log_scale = jnp.split(self.conditioner(a), 2)
        log_scale = jnp.tanh(log_scale)
        return self._join(a, (b - shift) * jnp.exp(-log_scale)), -jnp.sum(log_scale)


class Flow(eqx.Module):
    layers: list[Coupling]
    base: Affine

    def __init__(self, dim: int, width: int, depth: int, num_layers: int, *, key: PRNGKeyArray) -> None:
        keys = jr.split(key, num_layers)
        self.layers = [Coupling(dim, width, depth, flip=bool(i % 2), key=k) for i, k in enumerate(keys)]
        self.base = Affine(dim)

    def log_prob(self, x: Array) -> Array:
        total = jnp.zeros(())
        for layer in reversed(self.layers):
            x, log_det = layer.inverse(x)
            total = total + log_det
        z, log_det = self.base.inverse(x)
        base_log_prob = -0.5 * jnp.sum(z**2) - 0.5 * z.shape[0] * jnp.log(2 * jnp.pi)
        return base_log_prob + log_det + total

    def sample(self, key: PRNGKeyArray, dim: int) -> Array:
        z = jr.normal(key, (dim,))
        x, _ = self.base.forward(z)
        for layer in self.layers:
            x, _ = layer.forward(x)
        return x


class CNF(eqx.Module):
    """A continuous normalising flow with Hutchinson's trace estimator."""

    funcs: list[Func]
    data_size: int = eqx.field(static=True)
    exact_logp: bool = eqx.field(static=True)
    t0: float
    t1: float
    dt0: float

    def __init__(self, *, data_size: int, exact_logp: bool, num_blocks: int, width_size: int, depth: int,
                 key: PRNGKeyArray) -> None:
        keys = jr.split(key, num_blocks)
        self.funcs = [Func(data_size, width_size, depth, key=k) for k in keys]
        self.data_size = data_size
        self.exact_logp = exact_logp
        self.t0 = 0.0
        self.t1 = 0.5
        self.dt0 = 0.05

    def _drift(self, t: Array, y: tuple[Array, Array], args: tuple[Func, Array]) -> tuple[Array, Array]:
        func, eps = args
        y, _ = y
        fn = lambda y: func(t, y, None)
        f, vjp_fn = jax.vjp(fn, y)
        (eps_dfdy,) = vjp_fn(eps)
        logp = jnp.sum(eps_dfdy * eps)
        return f, logp

    def train(self, y: Array, *, key: PRNGKeyArray) -> Array:
        term = diffrax.ODETerm(self._drift)
        solver = diffrax.Tsit5()
        eps = jr.normal(key, y.shape)
        delta_log_likelihood = 0.0
        for func in reversed(self.funcs):
            y = (y, delta_log_likelihood)
            sol = diffrax.diffeqsolve(term, solver, self.t1, self.t0, -self.dt0, y, (func, eps))
            (y,), (delta_log_likelihood,) = sol.ys
        return delta_log_likelihood + jax.scipy.stats.norm.logpdf(y).sum()


def make_model(config: ModelConfig, *, key: PRNGKeyArray) -> LatentODE:
    return LatentODE(
        data_size=config.data_size,
        hidden_size=config.hidden_size,
        latent_size=config.latent_size,
        width_size=config.width_size,
        depth=config.depth,
        key=key,
    )


# ----------------------------------------------------------------------------------------
# Losses
# ----------------------------------------------------------------------------------------


def safe_log(x: Array, eps: float = 1e-12) -> Array:
    return jnp.log(jnp.maximum(x, eps))


def relative_error(pred: Array, target: Array) -> Array:
    norm = jnp.linalg.norm(target)
    return jnp.where(norm > 0, jnp.linalg.norm(pred - target) / norm, 0.0)


def smooth_l1(pred: Array, target: Array, beta: float = 1.0) -> Array:
    diff = jnp.abs(pred - target)
    return jnp.where(diff < beta, 0.5 * diff**2 / beta, diff - 0.5 * beta)


def log_cosh(pred: Array, target: Array) -> Array:
    diff = pred - target
    return jnp.where(jnp.abs(diff) > 10.0, jnp.abs(diff) - jnp.log(2.0), jnp.log(jnp.cosh(diff)))


@eqx.filter_value_and_grad
def ode_loss(model: NeuralODE, ti: Array, yi: Array) -> Array:
    y_pred = jax.vmap(model, in_axes=(None, 0))(ti[0], yi[:, 0])
    return jnp.mean((yi - y_pred) ** 2)


@eqx.filter_value_and_grad
def latent_loss(model: LatentODE, ts: Array, ys: Array, *, key: PRNGKeyArray) -> Array:
    batch_size = ts.shape[0]
    keys = jr.split(key, batch_size)
    losses = jax.vmap(model.train)(ts, ys, key=keys)
    return jnp.mean(losses)


def flow_loss(flow: Flow, x: Array) -> Array:
    return -jnp.mean(jax.vmap(flow.log_prob)(x))


def cnf_loss(model: CNF, data: Array, weight: Array, key: PRNGKeyArray) -> Array:
    batch_size, _ = data.shape
    noise_key, train_key = jr.split(key, 2)
    train_key = jr.split(key, batch_size)
    data = data + jr.normal(noise_key, data.shape) * 0.5 / 255.0
    log_likelihood = jax.vmap(model.train)(data, key=train_key)
    return -jnp.mean(weight * log_likelihood)


def kl_annealing(step: Int[Array, ""], warmup: int = 1000) -> Array:
    return jnp.minimum(1.0, step / warmup)


def gradient_penalty(model: eqx.Module, x: Array) -> Array:
    def scalar(x: Array) -> Array:
        return jnp.sum(model(x))

    grads = jax.vmap(jax.grad(scalar))(x)
    norms = jnp.sqrt(jnp.sum(grads**2, axis=-1))
    return jnp.mean((norms - 1.0) ** 2)


# ----------------------------------------------------------------------------------------
# Optimisation
# ----------------------------------------------------------------------------------------


def make_optimiser(config: TrainConfig, total_steps: int) -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0,
        peak_value=config.lr_strategy[0],
        warmup_steps=min(100, total_steps // 10),
        decay_steps=total_steps,
        end_value=config.lr_strategy[-1] / 10,
    )
    return optax.chain(
        optax.clip_by_global_norm(config.grad_clip),
        optax.adamw(schedule, weight_decay=config.weight_decay),
    )


@eqx.filter_jit
def make_step(
    model: NeuralODE, opt_state: optax.OptState, optim: optax.GradientTransformation, ti: Array, yi: Array
) -> tuple[Array, NeuralODE, optax.OptState]:
    loss, grads = ode_loss(model, ti, yi)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
    model = eqx.apply_updates(model, updates)
    return loss, model, opt_state


@eqx.filter_jit
def make_latent_step(
    model: LatentODE, opt_state: optax.OptState, optim: optax.GradientTransformation, ts: Array, ys: Array,
    key: PRNGKeyArray,
) -> tuple[Array, LatentODE, optax.OptState]:
    value, grads = latent_loss(model, ts, ys, key=key)
    key = jr.split(key, 1)[0]
    updates, opt_state = optim.update(grads, opt_state, model)
    model = eqx.apply_updates(model, updates)
    return value, model, opt_state


@eqx.filter_jit
def make_flow_step(flow: Flow, opt_state: optax.OptState, optim: optax.GradientTransformation, x: Array
                   ) -> tuple[Array, Flow, optax.OptState]:
    loss, grads = eqx.filter_value_and_grad(flow_loss)(flow, x)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(flow, eqx.is_inexact_array))
    flow = eqx.apply_updates(flow, updates)
    return loss, flow, opt_state


def train_cnf(model: CNF, data: Array, weights: Array, steps: int, lr: float, *, key: PRNGKeyArray) -> CNF:
    optim = optax.adam(lr)
    opt_state = optim.init(model)

    @eqx.filter_jit
    def step(model: CNF, opt_state: optax.OptState, key: PRNGKeyArray) -> tuple[Array, CNF, optax.OptState]:
        value, grads = eqx.filter_value_and_grad(cnf_loss)(model, data, weights, key)
        updates, opt_state = optim.update(grads, opt_state, model)
        model = eqx.apply_updates(model, updates)
        return value, model, opt_state

    for i in range(steps):
        key, subkey = jr.split(key)
        value, model, opt_state = step(model, opt_state, subkey)
        if i % 100 == 0:
            print(f"cnf step {i}: loss {value:.4f}")
    return model


def freeze_scale(model: NeuralODE) -> Any:
    filter_spec = jax.tree_util.tree_map(lambda _: True, model)
    filter_spec = eqx.tree_at(lambda m: m.func.scale, filter_spec, replace=False)
    return filter_spec


@eqx.filter_jit
def make_frozen_step(model: NeuralODE, opt_state: optax.OptState, optim: optax.GradientTransformation,
                     ti: Array, yi: Array) -> tuple[Array, NeuralODE, optax.OptState]:
    filter_spec = freeze_scale(model)
    diff_model, static_model = eqx.partition(model, filter_spec)

    @eqx.filter_value_and_grad
    def loss(diff_model: NeuralODE, static_model: NeuralODE) -> Array:
        model = eqx.combine(diff_model, static_model)
        y_pred = jax.vmap(model, in_axes=(None, 0))(ti[0], yi[:, 0])
        return jnp.mean((yi - y_pred) ** 2)

    value, grads = loss(diff_model, static_model)
    updates, opt_state = optim.update(grads, opt_state, diff_model)
    model = eqx.apply_updates(model, updates)
    return value, model, opt_state


# ----------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------


class Metrics(NamedTuple):
    mse: float
    relative: float
    max_error: float


def evaluate(model: NeuralODE, ts: Array, ys: Array) -> Metrics:
    pred = jax.vmap(model, in_axes=(None, 0))(ts[0], ys[:, 0])
    mse = float(jnp.mean((pred - ys) ** 2))
    relative = float(jnp.mean(jax.vmap(relative_error)(pred, ys)))
    max_error = float(jnp.max(jnp.abs(pred - ys)))
    return Metrics(mse, relative, max_error)


@eqx.filter_jit
def predict(model: NeuralODE, ts: Array, y0: Array) -> Array:
    return jax.vmap(model, in_axes=(None, 0))(ts, y0)


def energy(ys: Array, frequency: float) -> Array:
    position, velocity = ys[..., 0], ys[..., 1]
    return 0.5 * velocity**2 + 0.5 * frequency**2 * position**2


@jax.jit
def energy_drift(ys: Array, frequency: float) -> Array:
    e = energy(ys, frequency)
    drift = (e[..., -1] - e[..., 0]) / jnp.maximum(jnp.abs(e[..., 0]), 1e-8)
    if jnp.any(drift > 1.0):
        print("large energy drift", drift)
    return drift


def phase_error(pred: Array, target: Array) -> Array:
    angle_pred = jnp.arctan2(pred[..., 1], pred[..., 0])
    angle_target = jnp.arctan2(target[..., 1], target[..., 0])
    return jnp.abs(jnp.angle(jnp.exp(1j * (angle_pred - angle_target))))


def bootstrap_error(errors: Array, *, key: PRNGKeyArray, num_samples: int = 1000) -> tuple[Array, Array]:
    n = errors.shape[0]
    idx = jr.randint(key, (num_samples, n), 0, n)
    means = jnp.mean(errors[idx], axis=1)
    return jnp.percentile(means, 2.5), jnp.percentile(means, 97.5)


def evaluate_latent(model: LatentODE, ts: Array, *, key: PRNGKeyArray, num_samples: int = 16) -> Array:
    keys = jr.split(key, num_samples)
    samples = jax.vmap(lambda k: model.sample(ts, key=k))(keys)
    noise = jr.normal(key, samples.shape) * 0.01
    return samples + noise


def rollout(model: NeuralODE, ts: Array, y0: Array, horizon: int) -> Array:
    def body(carry: Array, t_pair: Array) -> tuple[Array, Array]:
        y = carry
        y_next = model(t_pair, y)[-1]
        return y_next, y_next

    pairs = jnp.stack([ts[:-1], ts[1:]], axis=-1)[:horizon]
    _, trajectory = lax.scan(body, y0, pairs)
    return trajectory


def interval_coverage(samples: Array, target: Array, level: float = 0.9) -> Array:
    lower = jnp.quantile(samples, (1 - level) / 2, axis=0)
    upper = jnp.quantile(samples, 1 - (1 - level) / 2, axis=0)
    inside = (target >= lower) & (target <= upper)
    return jnp.mean(inside.astype(jnp.float64))


def calibration_curve(samples: Array, target: Array, levels: Sequence[float]) -> list[float]:
    curve = []
    for level in levels:
        coverage = jax.jit(lambda s, t: interval_coverage(s, t, level))(samples, target)
        curve.append(float(coverage))
    return curve


# ----------------------------------------------------------------------------------------
# Checkpoints and logging
# ----------------------------------------------------------------------------------------


def save_checkpoint(path: pathlib.Path, model: eqx.Module, opt_state: optax.OptState, step: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write((json.dumps({"step": step}) + "\n").encode())
        eqx.tree_serialise_leaves(f, (model, opt_state))


def load_checkpoint(path: pathlib.Path, like: tuple[eqx.Module, optax.OptState]) -> tuple[Any, int]:
    with open(path, "rb") as f:
        header = json.loads(f.readline().decode())
        restored = eqx.tree_deserialise_leaves(f, like)
    return restored, header["step"]


class Logger:
    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.history: list[dict[str, float]] = []
        self.start = time.time()

    def log(self, step: int, **values: float) -> None:
        record = {"step": float(step), "time": time.time() - self.start, **values}
        self.history.append(record)
        message = ", ".join(f"{k}={v:.4g}" for k, v in record.items())
        print(message)
        if self.path is not None:
            with open(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")

    def best(self, key: str) -> float:
        return min(record[key] for record in self.history if key in record)


def count_parameters(model: eqx.Module) -> int:
    leaves = jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_inexact_array))
    return sum(int(np.prod(leaf.shape)) for leaf in leaves)


def parameter_norm(model: eqx.Module) -> Array:
    leaves = jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_inexact_array))
    return jnp.sqrt(sum(jnp.sum(leaf**2) for leaf in leaves))


def global_grad_norm(grads: PyTree) -> Array:
    leaves = jax.tree_util.tree_leaves(grads)
    return jnp.sqrt(sum(jnp.vdot(g, g) for g in leaves))


# ----------------------------------------------------------------------------------------
# Training loops
# ----------------------------------------------------------------------------------------


def train_neural_ode(config: Config, *, key: PRNGKeyArray, logger: Logger) -> NeuralODE:
    data_key, model_key, loader_key = jr.split(key, 3)
    ts, ys = make_dataset(config.data, key=data_key)
    ys, _, _ = normalise(ys)
    (train_ts, train_ys), (test_ts, test_ys) = train_test_split(ts, ys)
    _, length_size, data_size = train_ys.shape
    model = NeuralODE(data_size, config.model.width_size, config.model.depth, key=model_key)

    for lr, steps, length in zip(
        config.train.lr_strategy, config.train.steps_strategy, config.train.length_strategy
    ):
        optim = optax.adabelief(lr)
        opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
        _ts = train_ts[:, : int(length_size * length)]
        _ys = train_ys[:, : int(length_size * length)]
        loader = dataloader((_ts, _ys), config.train.batch_size, key=loader_key)
        for step, (ti, yi) in zip(range(steps), loader):
            start = time.time()
            loss, model, opt_state = make_step(model, opt_state, optim, ti, yi)
            end = time.time()
            if (step % config.train.print_every) == 0 or step == steps - 1:
                logger.log(step, loss=float(loss), seconds=end - start)
            if (step % config.train.eval_every) == 0:
                metrics = evaluate(model, test_ts, test_ys)
                logger.log(step, mse=metrics.mse, relative=metrics.relative)
    return model


def train_latent_ode(config: Config, *, key: PRNGKeyArray, logger: Logger) -> LatentODE:
    data_key, model_key, loader_key, train_key, sample_key = jr.split(key, 5)
    ts, ys = make_dataset(config.data, key=data_key)
    model = make_model(config.model, key=model_key)
    optim = optax.adam(config.train.lr_strategy[0])
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    loader = dataloader((ts, ys), config.train.batch_size, key=loader_key)
    for step, (ts_i, ys_i) in zip(range(config.train.steps_strategy[0]), loader):
        start = time.time()
        value, model, opt_state = make_latent_step(model, opt_state, optim, ts_i, ys_i, train_key)
        end = time.time()
        if (step % config.train.print_every) == 0:
            logger.log(step, loss=float(value), seconds=end - start)
        if (step % config.train.eval_every) == 0:
            sample_t = jnp.linspace(0, 12, 300)
            samples = evaluate_latent(model, sample_t, key=sample_key)
            logger.log(step, sample_std=float(jnp.std(samples)))
    return model


def train_flow(config: Config, data: Array, *, key: PRNGKeyArray, logger: Logger) -> Flow:
    flow_key, loader_key = jr.split(key)
    flow = Flow(data.shape[-1], config.model.width_size, config.model.depth, config.model.flow_layers, key=flow_key)
    optim = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    opt_state = optim.init(eqx.filter(flow, eqx.is_inexact_array))
    loader = dataloader((data,), config.train.batch_size, key=loader_key)
    for step, (x,) in zip(range(config.train.steps_strategy[0]), loader):
        loss, flow, opt_state = make_flow_step(flow, opt_state, optim, x)
        if step % config.train.print_every == 0:
            logger.log(step, flow_loss=float(loss))
    return flow


def sweep_widths(config: Config, widths: Sequence[int], *, key: PRNGKeyArray, logger: Logger) -> dict[int, float]:
    results = {}
    for width in widths:
        model_config = dataclasses.replace(config.model, width_size=width)
        model = NeuralODE(model_config.data_size, width, model_config.depth, key=key)
        ts, ys = make_dataset(config.data, key=key)
        metrics = evaluate(model, ts, ys)
        results[width] = metrics.mse
        logger.log(width, sweep_mse=metrics.mse)
    return results


def train_with_callbacks(model: NeuralODE, ts: Array, ys: Array, steps: int, *, key: PRNGKeyArray) -> NeuralODE:
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    def log_host(step: Array, loss: Array) -> None:
        print(f"[host] step={int(step)} loss={float(loss):.4f}")

    @eqx.filter_jit
    def step_fn(model: NeuralODE, opt_state: optax.OptState, step: Array) -> tuple[NeuralODE, optax.OptState]:
        loss, grads = ode_loss(model, ts, ys)
        jax.debug.callback(log_host, step, loss)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return eqx.apply_updates(model, updates), opt_state

    for i in range(steps):
        model, opt_state = step_fn(model, opt_state, jnp.asarray(i))
    return model


def scan_training(model: NeuralODE, ts: Array, ys: Array, steps: int) -> tuple[NeuralODE, Array]:
    optim = optax.sgd(1e-2)
    params, static = eqx.partition(model, eqx.is_inexact_array)
    opt_state = optim.init(params)

    def body(carry: tuple[PyTree, optax.OptState], _: None) -> tuple[tuple[PyTree, optax.OptState], Array]:
        params, opt_state = carry
        model = eqx.combine(params, static)
        loss, grads = ode_loss(model, ts, ys)
        updates, opt_state = optim.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), loss

    (params, opt_state), losses = lax.scan(body, (params, opt_state), None, length=steps)
    return eqx.combine(params, static), losses


def ensemble(config: Config, num_members: int, *, key: PRNGKeyArray) -> NeuralODE:
    keys = jr.split(key, num_members)

    @eqx.filter_vmap
    def make_member(k: PRNGKeyArray) -> NeuralODE:
        return NeuralODE(config.model.data_size, config.model.width_size, config.model.depth, key=k)

    return make_member(keys)


@eqx.filter_jit
def ensemble_predict(members: NeuralODE, ts: Array, y0: Array) -> Array:
    @eqx.filter_vmap(in_axes=(eqx.if_array(0), None, None))
    def one(member: NeuralODE, ts: Array, y0: Array) -> Array:
        return member(ts, y0)

    return one(members, ts, y0)


def mc_dropout_predict(model: eqx.Module, x: Array, num_samples: int, *, key: PRNGKeyArray) -> Array:
    preds = []
    for _ in range(num_samples):
        preds.append(model(x, key=key))
    return jnp.stack(preds)


def add_noise_schedule(x: Array, steps: int, *, key: PRNGKeyArray) -> list[Array]:
    out = []
    for step in range(steps):
        sigma = 0.1 * (step + 1)
        out.append(x + sigma * jr.normal(key, x.shape))
    return out


# ----------------------------------------------------------------------------------------
# Physics-informed parts
# ----------------------------------------------------------------------------------------


class HamiltonianNet(eqx.Module):
    mlp: eqx.nn.MLP

    def __init__(self, dim: int, width: int, depth: int, *, key: PRNGKeyArray) -> None:
        self.mlp = eqx.nn.MLP(2 * dim, "scalar", width, depth, activation=jnp.tanh, key=key)

    def hamiltonian(self, q: Array, p: Array) -> Array:
        return self.mlp(jnp.concatenate([q, p]))

    def vector_field(self, t: Array, y: Array, args: Any) -> Array:
        q, p = jnp.split(y, 2)
        dh_dq, dh_dp = jax.grad(self.hamiltonian, argnums=(0, 1))(q, p)
        return jnp.concatenate([dh_dp, -dh_dq])


def hamiltonian_rollout(net: HamiltonianNet, y0: Array, ts: Array) -> Array:
    term = diffrax.ODETerm(net.vector_field)
    solver = diffrax.Dopri5()
    sol = diffrax.diffeqsolve(
        term, solver, ts[0], ts[-1], None, y0,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-7),
        max_steps=None,
        adjoint=diffrax.RecursiveCheckpointAdjoint(),
    )
    return sol.ys


def stiff_relaxation(y0: Array, ts: Array, rate: float) -> Array:
    def vector_field(t: Array, y: Array, args: Array) -> Array:
        return -args * (y - jnp.cos(t))

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field),
        diffrax.Kvaerno5(),
        ts[0],
        ts[-1],
        0.01,
        y0,
        args=rate,
        saveat=diffrax.SaveAt(ts=ts),
    )
    return sol.ys


def sensitivity(rate: Array, y0: Array, ts: Array) -> Array:
    def final(rate: Array) -> Array:
        return stiff_relaxation(y0, ts, rate)[-1].sum()

    return jax.jacfwd(final)(rate)


def residual_loss(net: HamiltonianNet, ys: Array, ts: Array) -> Array:
    dt = ts[1:] - ts[:-1]
    finite_diff = (ys[1:] - ys[:-1]) / dt[:, None]
    field = jax.vmap(lambda t, y: net.vector_field(t, y, None))(ts[:-1], ys[:-1])
    return jnp.mean((finite_diff - field) ** 2)


def conserved_quantity_penalty(net: HamiltonianNet, ys: Array) -> Array:
    q, p = jnp.split(ys, 2, axis=-1)
    energies = jax.vmap(net.hamiltonian)(q, p)
    return jnp.var(energies)


def spectral_radius(matrix: Array, iterations: int = 20, *, key: PRNGKeyArray) -> Array:
    v = jr.normal(key, (matrix.shape[0],))

    def body(i: int, v: Array) -> Array:
        w = matrix @ v
        return w / jnp.linalg.norm(w)

    v = lax.fori_loop(0, iterations, body, v)
    return jnp.linalg.norm(matrix @ v)


def lipschitz_bound(model: eqx.nn.MLP, *, key: PRNGKeyArray) -> Array:
    bound = jnp.ones(())
    for layer in model.layers:
        bound = bound * spectral_radius(layer.weight.T @ layer.weight, key=key)
    return jnp.sqrt(bound)


# ----------------------------------------------------------------------------------------
# Utilities
# ----------------------------------------------------------------------------------------


def tree_size(tree: PyTree) -> int:
    return sum(x.size for x in jax.tree_util.tree_leaves(tree) if eqx.is_array(x))


def cast_tree(tree: PyTree, dtype: Any) -> PyTree:
    return jax.tree_util.tree_map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, tree)


def ema_update(ema: PyTree, new: PyTree, decay: float) -> PyTree:
    return jax.tree_util.tree_map(lambda e, n: decay * e + (1 - decay) * n, ema, new)


def interpolate_models(a: eqx.Module, b: eqx.Module, alpha: float) -> eqx.Module:
    params_a, static = eqx.partition(a, eqx.is_inexact_array)
    params_b, _ = eqx.partition(b, eqx.is_inexact_array)
    mixed = jax.tree_util.tree_map(lambda x, y: (1 - alpha) * x + alpha * y, params_a, params_b)
    return eqx.combine(mixed, static)


def moving_average(values: Sequence[float], window: int) -> list[float]:
    out: list[float] = []
    total = 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def grid_search(fn: Callable[[float, float], float], xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    best = (math.inf, xs[0], ys[0])
    for x in xs:
        for y in ys:
            value = fn(x, y)
            if value < best[0]:
                best = (value, x, y)
    return best[1], best[2]


def to_numpy(tree: PyTree) -> PyTree:
    return jax.tree_util.tree_map(lambda x: np.asarray(x) if eqx.is_array(x) else x, tree)


def describe(model: eqx.Module) -> str:
    lines = [f"{type(model).__name__}: {count_parameters(model)} parameters"]
    for path, leaf in jax.tree_util.tree_leaves_with_path(model):
        if eqx.is_array(leaf):
            lines.append(f"  {jax.tree_util.keystr(path)}: {leaf.shape} {leaf.dtype}")
    return "\n".join(lines)


def check_finite(tree: PyTree) -> bool:
    leaves = [x for x in jax.tree_util.tree_leaves(tree) if eqx.is_array(x)]
    return all(bool(jnp.all(jnp.isfinite(x))) for x in leaves)


def clip_tree(tree: PyTree, max_norm: float) -> PyTree:
    norm = global_grad_norm(tree)
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return jax.tree_util.tree_map(lambda x: x * scale, tree)


def random_rotation(dim: int, *, key: PRNGKeyArray) -> Array:
    q, r = jnp.linalg.qr(jr.normal(key, (dim, dim)))
    return q * jnp.sign(jnp.diag(r))


def augment(batch: Array, *, key: PRNGKeyArray) -> Array:
    rot_key, noise_key = jr.split(key)
    rotation = random_rotation(batch.shape[-1], key=rot_key)
    rotated = batch @ rotation.T
    return rotated + 0.01 * jr.normal(noise_key, batch.shape)


def pairwise_distances(x: Array) -> Array:
    diff = x[:, None, :] - x[None, :, :]
    return jnp.sqrt(jnp.sum(diff**2, axis=-1))


def mmd(x: Array, y: Array, bandwidth: float = 1.0) -> Array:
    def kernel(a: Array, b: Array) -> Array:
        return jnp.exp(-jnp.sum((a[:, None] - b[None]) ** 2, axis=-1) / (2 * bandwidth**2))

    return jnp.mean(kernel(x, x)) + jnp.mean(kernel(y, y)) - 2 * jnp.mean(kernel(x, y))


def running_stats(xs: Array) -> tuple[Array, Array]:
    def body(carry: tuple[Array, Array, Array], x: Array) -> tuple[tuple[Array, Array, Array], None]:
        count, mean, m2 = carry
        count = count + 1
        delta = x - mean
        mean = mean + delta / count
        m2 = m2 + delta * (x - mean)
        return (count, mean, m2), None

    init = (jnp.zeros(()), jnp.zeros(xs.shape[1:]), jnp.zeros(xs.shape[1:]))
    (count, mean, m2), _ = lax.scan(body, init, xs)
    return mean, m2 / jnp.maximum(count - 1, 1)


# ----------------------------------------------------------------------------------------
# Experiments
# ----------------------------------------------------------------------------------------


def experiment_neural_ode(config: Config, out_dir: pathlib.Path) -> dict[str, float]:
    key = jr.PRNGKey(config.train.seed)
    logger = Logger(str(out_dir / "neural_ode.jsonl"))
    model = train_neural_ode(config, key=key, logger=logger)
    save_checkpoint(out_dir / "neural_ode.eqx", model, None, config.train.steps_strategy[-1])
    ts, ys = make_dataset(config.data, key=key)
    metrics = evaluate(model, ts, ys)
    return {"mse": metrics.mse, "relative": metrics.relative, "max_error": metrics.max_error}


def experiment_latent_ode(config: Config, out_dir: pathlib.Path) -> dict[str, float]:
    key = jr.PRNGKey(config.train.seed + 1)
    logger = Logger(str(out_dir / "latent_ode.jsonl"))
    model = train_latent_ode(config, key=key, logger=logger)
    ts = jnp.linspace(0.0, config.data.t_end, config.data.length)
    samples = evaluate_latent(model, ts, key=jr.PRNGKey(0))
    return {"sample_std": float(jnp.std(samples)), "best_loss": logger.best("loss")}


def experiment_flow(config: Config, out_dir: pathlib.Path) -> dict[str, float]:
    key = jr.PRNGKey(config.train.seed + 2)
    data_key, train_key = jr.split(key)
    ts, ys = make_dataset(config.data, key=data_key)
    data = ys[:, -1, :]
    logger = Logger(str(out_dir / "flow.jsonl"))
    flow = train_flow(config, data, key=train_key, logger=logger)
    samples = jax.vmap(lambda k: flow.sample(k, data.shape[-1]))(jr.split(train_key, 512))
    return {"mmd": float(mmd(samples, data))}


def experiment_hamiltonian(config: Config, out_dir: pathlib.Path) -> dict[str, float]:
    key = jr.PRNGKey(config.train.seed + 3)
    net_key, data_key = jr.split(key)
    net = HamiltonianNet(1, config.model.width_size, config.model.depth, key=net_key)
    ts, ys = make_dataset(config.data, key=data_key)
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(net, eqx.is_inexact_array))

    @eqx.filter_jit
    def step(net: HamiltonianNet, opt_state: optax.OptState) -> tuple[Array, HamiltonianNet, optax.OptState]:
        loss, grads = eqx.filter_value_and_grad(
            lambda n: jnp.mean(jax.vmap(lambda y, t: residual_loss(n, y, t))(ys, ts))
        )(net)
        updates, opt_state = optim.update(grads, opt_state)
        net = eqx.apply_updates(net, updates)
        return loss, net, opt_state

    for i in range(config.train.steps_strategy[0]):
        loss, net, opt_state = step(net, opt_state)
        if i % config.train.print_every == 0:
            print(f"hamiltonian step {i}: {float(loss):.5f}")
    rollout_ys = hamiltonian_rollout(net, ys[0, 0], ts[0])
    return {"rollout_error": float(jnp.mean((rollout_ys - ys[0]) ** 2))}


def experiment_sensitivity(config: Config) -> dict[str, float]:
    ts = jnp.linspace(0.0, 1.0, 11)
    y0 = jnp.ones(3)
    rates = jnp.array([1.0, 10.0, 100.0])
    out = {}
    for rate in rates:
        out[f"rate_{float(rate):g}"] = float(sensitivity(rate, y0, ts).sum())
    return out


def experiment_ensemble(config: Config) -> dict[str, float]:
    key = jr.PRNGKey(config.train.seed + 4)
    members = ensemble(config, 5, key=key)
    ts = jnp.linspace(0.0, 1.0, 20)
    y0 = jnp.array([1.0, 0.0])
    preds = ensemble_predict(members, ts, y0)
    spread = jnp.std(preds, axis=0)
    return {"spread": float(jnp.mean(spread))}


EXPERIMENTS: dict[str, Callable[..., dict[str, float]]] = {
    "neural_ode": experiment_neural_ode,
    "latent_ode": experiment_latent_ode,
    "flow": experiment_flow,
    "hamiltonian": experiment_hamiltonian,
}


def run_all(config: Config, out_dir: pathlib.Path, names: Sequence[str]) -> dict[str, dict[str, float]]:
    results = {}
    for name in names:
        start = time.time()
        results[name] = EXPERIMENTS[name](config, out_dir)
        results[name]["seconds"] = time.time() - start
        print(f"{name}: {results[name]}")
    results["sensitivity"] = experiment_sensitivity(config)
    results["ensemble"] = experiment_ensemble(config)
    return results


def write_report(results: dict[str, dict[str, float]], path: pathlib.Path) -> None:
    lines = ["| experiment | metric | value |", "|---|---|---|"]
    for name, metrics in sorted(results.items()):
        for metric, value in sorted(metrics.items()):
            lines.append(f"| {name} | {metric} | {value:.4g} |")
    path.write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    out_dir = pathlib.Path(config.train.checkpoint_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if os.environ.get("JAX_PLATFORM_NAME") is None:
        print("running on", jax.devices())
    results = run_all(config, out_dir, list(EXPERIMENTS))
    write_report(results, out_dir / "report.md")
    with open(out_dir / "results.json", "w") as f:
        json.dump(results, f, indent=2, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
