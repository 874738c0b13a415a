"""The model half of a training script split over two files (as in diffrax#521)."""
import diffrax
import equinox as eqx
import jax


class NeuralODE(eqx.Module):
    func: eqx.nn.MLP
    controller: diffrax.PIDController

    def __init__(self, key):
        self.func = eqx.nn.MLP(2, 2, 32, 2, activation=jax.nn.softplus, key=key)
        self.controller = diffrax.PIDController(rtol=1e-3, atol=1e-6)

    def __call__(self, ts, y0):
        term = diffrax.ODETerm(lambda t, y, args: self.func(y))
        solution = diffrax.diffeqsolve(term, diffrax.Tsit5(), ts[0], ts[-1], 0.1, y0,
                                       stepsize_controller=self.controller, saveat=diffrax.SaveAt(ts=ts))
        return solution.ys
