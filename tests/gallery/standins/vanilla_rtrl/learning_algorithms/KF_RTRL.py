"""Stand-in KF-RTRL (Mujika, Meier & Steger 2018 §4): M ~ u (x) A with u over â (m) and A (n x n) started at
standard-normal draws like the library's, two signs c1, c2 per step: u' = c1 r1 u + c2 r2 â,
A' = c1/r1 J A + c2/r2 diag(alpha phi'); gradient (q A)_i u_j; see ../README.md."""

import numpy as np

from ._base import Base


class KF_RTRL(Base):
    def __init__(self, rnn):
        super().__init__(rnn)
        self.n_nu = 2
        self.A = np.random.normal(0.0, 1.0, self.m)  # noqa: NPY002 -- the library's names: A is u, B is A
        self.B = np.random.normal(0.0, 1.0, (self.n_h, self.n_h))  # noqa: NPY002

    def update_learning_vars(self):
        self.rnn.get_a_jacobian()
        c = self.sample_nu()
        JB, D, ah = self.rnn.a_J @ self.B, np.diag(self.immediate_diag()), self.a_hat()
        r1 = np.sqrt(np.linalg.norm(JB) / np.linalg.norm(self.A))
        r2 = np.sqrt(np.linalg.norm(D) / np.linalg.norm(ah))
        self.A, self.B = c[0] * r1 * self.A + c[1] * r2 * ah, c[0] / r1 * JB + c[1] / r2 * D

    def get_rec_grads(self):
        return np.outer(self.q @ self.B, self.A)
