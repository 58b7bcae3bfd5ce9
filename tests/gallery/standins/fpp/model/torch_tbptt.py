"""Stand-in (not the repository's code): truncated BPTT of the last loss through the buffer's window.

With ``RNN_VERIFY_STANDIN_BUG=1`` the window loses its first transition (k - 1 differentiated: the seeded bug)."""

import os

import torch

from .torch_rnn import SimpleRNN


class TBPTTModel:
    def __init__(self, input_size, hidden_size, output_size, lr, state_update, batch_size, T, overlap, device):
        self.rnn_model = SimpleRNN(input_size, hidden_size, output_size)
        self.criterion = torch.nn.CrossEntropyLoss()
        self._state = None

    def forward(self, x, y):
        with torch.no_grad():
            old = self._state.clone()
            ys, self._state = self.rnn_model(x, old)
            return self.criterion(ys[-1], y).item(), 0.0, old, self._state

    def train(self, x_batch, s_batch, s_new_batch, y_batch):
        cut = 1 if os.environ.get("RNN_VERIFY_STANDIN_BUG") and len(x_batch) > 1 else 0
        ys, _ = self.rnn_model(x_batch[cut:], s_batch[cut : cut + 1].detach())
        loss = self.criterion(ys[-1], y_batch[-1])
        for p in self.rnn_model.parameters():
            p.grad = None
        loss.backward()
        return loss.item(), None, None
