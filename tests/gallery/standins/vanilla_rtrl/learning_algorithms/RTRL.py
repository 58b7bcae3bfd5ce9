"""Stand-in RTRL (Williams & Zipser 1989): M_t = J_t M_(t-1) + dF/dtheta, kept as (n, n, m) and exposed as the
library's ``dadw`` (column i + n j is W_ij of the n x m matrix [W_rec, W_in, b_rec]); see ../README.md."""

import numpy as np

from ._base import Base, bug


class RTRL(Base):
    def __init__(self, rnn):
        super().__init__(rnn)
        self.M = np.zeros((self.n_h, self.n_h, self.m))
        self.t = 0

    @property
    def dadw(self):
        return self.M.transpose(0, 2, 1).reshape(self.n_h, -1)

    def update_learning_vars(self):
        self.rnn.get_a_jacobian()
        imm = np.zeros_like(self.M)
        idx = np.arange(self.n_h)
        imm[idx, idx, :] = self.immediate_diag()[:, None] * self.a_hat()[None, :]
        self.t += 1
        keep = 0.0 if (bug("rtrl-no-immediate") and self.t > 1) else 1.0
        self.M = np.einsum("kl,lij->kij", self.rnn.a_J, self.M) + keep * imm

    def get_rec_grads(self):
        return np.einsum("k,kij->ij", self.q, self.M)
