"""Stand-in helper: the parameters that require grad as one flat leaf ``theta``, the network called on its views."""

import torch
from torch.func import functional_call


class Merged(torch.nn.Module):
    def __init__(self, net, optimizer_factory):
        super().__init__()
        self.net = net
        self.names = [k for k, p in net.named_parameters() if p.requires_grad]
        found = dict(net.named_parameters())
        self.shapes = [found[k].shape for k in self.names]
        self.theta = torch.cat([found[k].detach().reshape(-1) for k in self.names]).requires_grad_(True)
        self.optimizer = optimizer_factory([self.theta])

    def call(self, theta, x, s):
        parts = torch.split(theta, [int(torch.Size(sh).numel()) for sh in self.shapes])
        return functional_call(
            self.net, {k: v.view(sh) for k, v, sh in zip(self.names, parts, self.shapes, strict=False)}, (x, s)
        )
