"""Stand-in (not the repository's code): a sliding buffer of transitions (o_j, s_{j-1}, s_j, y_j).

``sample_successive(T)`` draws the last index i of a window uniformly from {T..n} (FPP §4.1); with
``RNN_VERIFY_STANDIN_BUG=1`` it never draws i = n (an exclusive upper bound: the seeded bug)."""

import os

import numpy as np
import torch


class ReplayBuffer:
    def __init__(self, size):
        self._storage, self._maxsize = [], size

    def add(self, data):
        self._storage = ([*self._storage, data])[-self._maxsize :]

    def _take(self, idxes):
        cols = list(zip(*[self._storage[i] for i in idxes], strict=False))
        return (*[torch.cat(c, dim=0) for c in cols], idxes)

    def sample_all(self):
        out = self._take(list(range(len(self._storage))))
        return (*out[:3], out[3].unsqueeze(1), out[4])

    def sample_successive(self, batch_len):
        n = len(self._storage)
        last = np.random.randint(batch_len, n + (0 if os.environ.get("RNN_VERIFY_STANDIN_BUG") else 1))  # noqa: NPY002
        return self._take(list(range(last - batch_len, last)))
