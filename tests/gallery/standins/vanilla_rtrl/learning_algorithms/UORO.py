"""Stand-in UORO (Tallec & Ollivier 2017, Algorithm 1 without its epsilons): s~ (here ``A``, n) and theta~
(``B``, n x m) started at standard-normal draws like the library's, s~' = rho0 J s~ + rho1 nu,
theta~' = theta~/rho0 + nu^T (dF/dtheta)/rho1, gradient (q . s~) theta~ from the updated factors; see ../README.md."""

import numpy as np

from ._base import Base


class UORO(Base):
    def __init__(self, rnn):
        super().__init__(rnn)
        self.n_nu = self.n_h
        self.A = np.random.normal(0.0, 1.0, self.n_h)  # noqa: NPY002
        self.B = np.random.normal(0.0, 1.0, (self.n_h, self.m))  # noqa: NPY002

    def update_learning_vars(self):
        self.rnn.get_a_jacobian()
        nu = self.sample_nu()
        JA = self.rnn.a_J @ self.A
        proj = (nu * self.immediate_diag())[:, None] * self.a_hat()[None, :]
        r0 = np.sqrt(np.linalg.norm(self.B) / np.linalg.norm(JA))
        r1 = np.sqrt(np.linalg.norm(proj) / np.linalg.norm(nu))
        self.A, self.B = r0 * JA + r1 * nu, self.B / r0 + proj / r1

    def get_rec_grads(self):
        return (self.q @ self.A) * self.B
