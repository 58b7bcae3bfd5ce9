"""Stand-in (not the repository's code): the optimizer factory the adapters use."""

from functools import partial

import torch


def get_named_torch_optimizer_factory(name, learning_rate):
    return partial({"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[name.lower()], lr=learning_rate)
