"""Stand-in (not the repository's code): an Elman-tanh RNN (``torch.nn.RNN``) with a linear readout."""

import torch


class StatelessPredictorRNN(torch.nn.Module):
    def __init__(self, n_in, n_hid, n_out):
        super().__init__()
        self.rnn = torch.nn.RNN(n_in, n_hid)
        self.output_layer = torch.nn.Linear(n_hid, n_out)

    def forward(self, x, prev_state):
        """x (B, d), prev_state (1, B, n) -> prediction (B, k), state (1, B, n)."""
        hs, state = self.rnn(x[None], prev_state)
        return self.output_layer(hs[-1]), state
