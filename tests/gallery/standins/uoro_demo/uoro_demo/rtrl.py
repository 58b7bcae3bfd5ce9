"""Stand-in (not the repository's code): RTRL (Tallec & Ollivier 2017, eq. (4)): the gradient of the loss is
∂ℓ/∂s_{t-1} J_{t-1} + ∂ℓ/∂θ, then J_t = ∂s_t/∂s_{t-1} J_{t-1} + ∂s_t/∂θ. ``dstate_dtheta`` is J_t (n, p).
With ``RNN_VERIFY_STANDIN_BUG=1`` J_t drops the propagated term (the seeded bug)."""

import os

import torch
from torch.func import jacrev

from ._merged import Merged


class RTRL(Merged):
    def __init__(self, forward_update_module, loss, optimizer_factory):
        super().__init__(forward_update_module, optimizer_factory)
        self.loss_function, self.state, self.dstate_dtheta = loss, None, None

    def train_it(self, x, y):
        s = self.state.detach().reshape(-1)
        th = self.theta.detach()
        J = torch.zeros(s.numel(), th.numel()) if self.dstate_dtheta is None else self.dstate_dtheta

        def loss(th_, s_):
            return self.loss_function(self.call(th_, x, s_.view(1, 1, -1))[0], y)

        def new_state(th_, s_):
            return self.call(th_, x, s_.view(1, 1, -1))[1].reshape(-1)

        l_th, l_s = torch.func.grad(loss, argnums=(0, 1))(th, s)
        D_th, D_s = jacrev(new_state, argnums=(0, 1))(th, s)
        self.theta.grad = l_s @ J + l_th
        self.dstate_dtheta = D_th if os.environ.get("RNN_VERIFY_STANDIN_BUG") else D_s @ J + D_th
        self.state = new_state(th, s).view(1, 1, -1)
        self.optimizer.step()
