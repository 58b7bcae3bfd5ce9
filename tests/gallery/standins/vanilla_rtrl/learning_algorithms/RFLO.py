"""Stand-in RFLO (Murray 2019): each synapse's trace P_t = (1 - alpha) P_(t-1) + alpha phi'(h_t) â_t (RTRL's
recurrent term dropped), gradient q_i P_ij; see ../README.md."""

import numpy as np

from ._base import Base, bug


class RFLO(Base):
    def __init__(self, rnn, alpha):
        super().__init__(rnn)
        self.alpha = alpha
        self.B = np.zeros((self.n_h, self.m))

    def update_learning_vars(self):
        leak = 1.0 if bug("rflo-no-leak") else 1.0 - self.alpha
        self.B = leak * self.B + np.outer(self.immediate_diag(), self.a_hat())

    def get_rec_grads(self):
        return self.q[:, None] * self.B
