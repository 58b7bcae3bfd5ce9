r"""Stand-in for vanilla-rtrl's ``core.RNN`` (see ../README.md): leaky rate units
:math:`a_t = (1-\alpha)a_{t-1} + \alpha\phi(h_t)`, :math:`h_t = W_{rec}a_{t-1} + W_{in}x_t + b_{rec}`,
:math:`z_t = W_{out}a_t + b_{out}` (Murray 2019; :math:`\alpha = 1` is the Elman network)."""

import numpy as np


class RNN:
    def __init__(self, W_in, W_rec, W_out, b_rec, b_out, activation, alpha, output, loss):
        self.W_in, self.W_rec, self.W_out, self.b_rec, self.b_out = W_in, W_rec, W_out, b_rec, b_out
        self.n_h, self.n_in = W_in.shape
        self.n_out = W_out.shape[0]
        self.activation, self.alpha, self.output, self.loss = activation, alpha, output, loss
        self.params = [W_rec, W_in, b_rec, W_out, b_out]
        self.shapes = [w.shape for w in self.params]
        self.reset_network()

    def reset_network(self, h=None, a=None):
        self.h = np.random.normal(0.0, 1.0, self.n_h) if h is None else h  # noqa: NPY002 -- as the library: global
        self.a = self.activation.f(self.h) if a is None else a
        self.z = self.W_out @ self.a + self.b_out

    def next_state(self, x):
        self.x, self.a_prev = x, self.a.copy()
        self.h = self.W_rec @ self.a + self.W_in @ x + self.b_rec
        self.a = (1.0 - self.alpha) * self.a + self.alpha * self.activation.f(self.h)

    def z_out(self):
        self.z = self.W_out @ self.a + self.b_out

    def get_a_jacobian(self):
        """da_t/da_(t-1) = alpha diag(phi'(h_t)) W_rec + (1 - alpha) I."""
        self.a_J = self.alpha * self.activation.f_prime(self.h)[:, None] * self.W_rec + (1.0 - self.alpha) * np.eye(
            self.n_h
        )
