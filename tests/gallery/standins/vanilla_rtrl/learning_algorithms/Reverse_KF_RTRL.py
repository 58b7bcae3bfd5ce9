"""Stand-in Reverse KF-RTRL (Marschall, Cho & Savin 2020): M_kij ~ A_i B_kj, A (n) and B (n x m) started at
standard-normal draws, A' = r0 A + r1 nu, B' = J B / r0 + nu^T (dF/dtheta) / r1 (E[nu_i nu_k] = delta_ik gives the
RTRL recursion in expectation); gradient A_i (q B)_j; see ../README.md."""

import numpy as np

from ._base import Base


class Reverse_KF_RTRL(Base):
    def __init__(self, rnn):
        super().__init__(rnn)
        self.n_nu = self.n_h
        self.A = np.random.normal(0.0, 1.0, self.n_h)  # noqa: NPY002
        self.B = np.random.normal(0.0, 1.0, (self.n_h, self.m))  # noqa: NPY002

    def update_learning_vars(self):
        self.rnn.get_a_jacobian()
        nu = self.sample_nu()
        JB = self.rnn.a_J @ self.B
        proj = (nu * self.immediate_diag())[:, None] * self.a_hat()[None, :]
        r0 = np.sqrt(np.linalg.norm(JB) / np.linalg.norm(self.A))
        r1 = np.sqrt(np.linalg.norm(proj) / np.linalg.norm(nu))
        self.A, self.B = r0 * self.A + r1 * nu, JB / r0 + proj / r1

    def get_rec_grads(self):
        return np.outer(self.A, self.q @ self.B)
