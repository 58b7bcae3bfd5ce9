"""Stand-in (not the repository's code): UORO, Tallec & Ollivier 2017 Algorithm 1, written from the paper
(forwarddiff exact, by a Jacobian-vector product; ν = round(rand) * 2 - 1, one ``torch.rand`` call per step).

``forward(x, y)`` sets each parameter's ``.grad`` to g̃ (from the factors before their update) and takes an optimizer
step. With ``RNN_VERIFY_STANDIN_BUG=1`` θ̃ is not divided by ρ₀ (biased: the seeded bug)."""

import os

import torch
from torch.autograd import grad

from .torch_rnn import SimpleRNN


class Param2Vec:
    def __init__(self, model):
        self.param_list = [p for p in model.parameters() if p.requires_grad]

    def merge(self, grads):
        return torch.cat(
            [
                (torch.zeros_like(p) if g is None else g).reshape(-1)
                for p, g in zip(self.param_list, grads, strict=False)
            ]
        )

    def split(self, vec):
        sizes = [p.numel() for p in self.param_list]
        return [v.view_as(p) for v, p in zip(torch.split(vec, sizes), self.param_list, strict=False)]


class UOROModel:
    def __init__(self, input_size, hidden_size, output_size, lr, device, optimizer_type="RMSprop"):
        self.rnn_model = SimpleRNN(input_size, hidden_size, output_size)
        self.nn_param = Param2Vec(self.rnn_model)
        self.criterion = torch.nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(self.rnn_model.parameters(), lr=lr)
        self.s_tilda = self.theta_tilda = None
        self._state = None

    def forward(self, x, y):
        params, eps = self.nn_param.param_list, 1e-7
        s_old = self._state.detach().clone().requires_grad_(True)
        ys, s_new = self.rnn_model(x, s_old)
        loss = self.criterion(ys[-1], y)
        d_s, *d_th = grad(loss, [s_old, *params], retain_graph=True, allow_unused=True)
        if self.s_tilda is None:
            self.s_tilda, self.theta_tilda = torch.zeros(s_old.numel()), torch.zeros(sum(p.numel() for p in params))
        g = torch.dot(d_s.reshape(-1), self.s_tilda) * self.theta_tilda + self.nn_param.merge(d_th)
        u = torch.zeros_like(s_new, requires_grad=True)  # forwarddiff by the double-vjp trick: J s~ = d/du (u^T J) s~
        vjp = grad(s_new, s_old, u, create_graph=True)[0]
        fd = grad(vjp, u, self.s_tilda.view_as(s_old), retain_graph=True)[0].reshape(-1)
        nu = torch.round(torch.rand(*s_old.shape)) * 2 - 1
        d_g = self.nn_param.merge(grad(s_new, params, nu, retain_graph=True, allow_unused=True))
        rho0 = torch.sqrt(self.theta_tilda.norm() / (fd.norm() + eps)) + eps
        rho1 = torch.sqrt(d_g.norm() / (nu.norm() + eps)) + eps
        self.s_tilda = (rho0 * fd + rho1 * nu.reshape(-1)).detach()
        scale = 1.0 if os.environ.get("RNN_VERIFY_STANDIN_BUG") else rho0
        self.theta_tilda = (self.theta_tilda / scale + d_g / rho1).detach()
        for p, gp in zip(params, self.nn_param.split(g), strict=False):
            p.grad = gp.detach()
        self.optimizer.step()
        self._state = s_new.detach()
        return loss.item(), 0.0, s_old, s_new
