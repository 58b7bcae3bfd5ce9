"""Stand-in (not the repository's code): an Elman-tanh RNN or a GRU (``torch.nn.RNN``/``GRU``), linear readout."""

import torch


class StatelessPredictorRNN(torch.nn.Module):
    def __init__(self, n_in, n_hid, n_out, rnn_type="elman"):
        super().__init__()
        self.rnn = {"elman": torch.nn.RNN, "gru": torch.nn.GRU}[rnn_type](n_in, n_hid)
        self.output_layer = torch.nn.Linear(n_hid, n_out)

    def forward(self, x, prev_state):
        """x (B, d), prev_state (1, B, n) -> prediction (B, k), state (1, B, n)."""
        hs, state = self.rnn(x[None], prev_state)
        return self.output_layer(hs[-1]), state
