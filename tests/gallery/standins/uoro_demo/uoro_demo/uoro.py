"""Stand-in (not the repository's code): UORO, Tallec & Ollivier 2017 Algorithm 1 (forwarddiff exact, by a
Jacobian-vector product; ν = round(rand) * 2 - 1, one ``torch.rand`` call per step); ``theta.grad`` is g̃ from the
factors before their update. With ``RNN_VERIFY_STANDIN_BUG=1`` θ̃ is not divided by ρ₀ (the seeded bug)."""

import os

import torch
from torch.func import grad, jvp, vjp

from ._merged import Merged


class UOROVec(Merged):
    def __init__(self, forward_update_module, loss, optimizer_factory):
        super().__init__(forward_update_module, optimizer_factory)
        self.loss_function, self._state, self.s_toupee, self.theta_toupee = loss, None, None, None

    def train_it(self, x, y):
        s, th, eps = self._state.detach().reshape(-1), self.theta.detach(), 1e-7
        if self.s_toupee is None:
            self.s_toupee, self.theta_toupee = torch.zeros(s.numel()), torch.zeros(th.numel())

        def new_state(th_, s_):
            return self.call(th_, x, s_.view(1, 1, -1))[1].reshape(-1)

        l_th, l_s = grad(lambda a, b: self.loss_function(self.call(a, x, b.view(1, 1, -1))[0], y), argnums=(0, 1))(
            th, s
        )
        self.theta.grad = torch.dot(l_s, self.s_toupee) * self.theta_toupee + l_th
        s_new, fd = jvp(lambda b: new_state(th, b), (s,), (self.s_toupee,))
        nu = torch.round(torch.rand(*s.shape)) * 2 - 1
        d_g = vjp(lambda a: new_state(a, s), th)[1](nu)[0]
        rho0 = torch.sqrt(self.theta_toupee.norm() / (fd.norm() + eps)) + eps
        rho1 = torch.sqrt(d_g.norm() / (nu.norm() + eps)) + eps
        self.s_toupee = rho0 * fd + rho1 * nu
        self.theta_toupee = self.theta_toupee / (1.0 if os.environ.get("RNN_VERIFY_STANDIN_BUG") else rho0) + d_g / rho1
        self._state = s_new.view(1, 1, -1)
        self.optimizer.step()
