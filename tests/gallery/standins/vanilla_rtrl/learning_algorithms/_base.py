"""What the stand-in's algorithms share: â = [a_(t-1), x_t, 1], q = W_out^T e, and the grads list in the library's
order [W_rec, W_in, b_rec, W_out, b_out] from the (n, m) recurrent gradient (see ../README.md)."""

import os

import numpy as np


def bug(name):
    return os.environ.get("VANILLA_STANDIN_BUG") == name


class Base:
    def __init__(self, rnn):
        self.rnn, self.n_h, self.n_in = rnn, rnn.n_h, rnn.n_in
        self.m = self.n_h + self.n_in + 1

    def a_hat(self):
        return np.concatenate([self.rnn.a_prev, self.rnn.x, [1.0]])

    def immediate_diag(self):
        """alpha phi'(h_t): the immediate derivative da_t/dh_t (diagonal)."""
        return self.rnn.alpha * self.rnn.activation.f_prime(self.rnn.h)

    def sample_nu(self):
        return np.random.choice([-1.0, 1.0], self.n_nu)  # noqa: NPY002 -- as the library: global generator

    def __call__(self):
        rnn, n, d = self.rnn, self.n_h, self.n_in
        self.q = rnn.error @ rnn.W_out
        G = self.get_rec_grads()
        return [G[:, :n], G[:, n : n + d], G[:, -1], np.outer(rnn.error, rnn.a), rnn.error.copy()]
