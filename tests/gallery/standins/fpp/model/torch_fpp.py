"""Stand-in (not the repository's code): one FPP update on a window (FPP eq. (6)-(7) by autograd).

``train`` returns the loss and s - lr * grad for s_{i-T} and s_i; the parameters' ``.grad`` hold the gradient.
With ``RNN_VERIFY_STANDIN_BUG=1`` the penalty's sign is flipped (the seeded bug)."""

import os

import torch

from .torch_rnn import SimpleRNN


class FPPModel:
    def __init__(self, input_size, hidden_size, output_size, lr, state_update, batch_size, T, reg_lambda, device):
        self.lr, self.reg_lambda = lr, reg_lambda
        self.rnn_model = SimpleRNN(input_size, hidden_size, output_size)
        self.criterion = torch.nn.CrossEntropyLoss()
        self._state = None

    def train(self, x_batch, s_batch, s_new_batch, y_batch):
        start = s_batch[0:1].detach().clone().requires_grad_(True)
        end = s_new_batch[-1:].detach().clone().requires_grad_(True)
        ys, s_hat = self.rnn_model(x_batch, start)
        sign = -1.0 if os.environ.get("RNN_VERIFY_STANDIN_BUG") else 1.0
        loss = self.criterion(ys[-1], y_batch[-1]) + sign * self.reg_lambda * ((end - s_hat) ** 2).mean()
        for p in self.rnn_model.parameters():
            p.grad = None
        loss.backward()
        return loss.item(), (start - self.lr * start.grad).detach(), (end - self.lr * end.grad).detach()
