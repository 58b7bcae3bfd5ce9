"""Stand-in (not the repository's code): ``SimpleRNN`` -- ``torch.nn.RNN`` (tanh) and a linear readout."""

import torch


class SimpleRNN(torch.nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.rnn_layer = torch.nn.RNN(input_size, hidden_size, 1)
        self.output_layer = torch.nn.Linear(hidden_size, output_size)

    def forward(self, x, state):
        """x (T, B, d), state (1, B, n) -> outputs (T, B, k), last state (1, B, n)."""
        hs, last = self.rnn_layer(x, state)
        return self.output_layer(hs), last
