"""FPP's buffer keeps two copies of every state variable, updated independently (VincentLiu3/fpp @ c8df3b4).

Transition j is stored as (o_j, s_{j-1}, s_j, y_j): s_j is held twice, as the end of transition j and as the start
of transition j + 1. ``main_torch.py`` (l. 181-182) writes FPP's updated s_i with ``replace_new`` (the end copy of
transition i) and s_{i-T} with ``replace_old`` (the start copy of transition i-T+1); nothing writes the other copy.
So the variable a later window starts from is never the one an earlier window's penalty moved: Algorithm 1's
"update s_{i-T} and s_i in the buffer" (one variable each) is not what runs.

Run: python reports/gallery-notes/repro/fpp_buffer_copies.py /path/to/fpp-checkout
"""

import sys

import torch

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "/work/gallery-src/fpp")
from model.torch_buffer import ReplayBuffer

buffer = ReplayBuffer(10)
s = [torch.full((1, 1, 1), float(j)) for j in range(6)]  # s_0 .. s_5
for j in range(1, 6):
    buffer.add((torch.zeros(1, 1, 1), s[j - 1], s[j], torch.tensor([0])))  # transition j (storage j - 1)
buffer.replace_new(2, torch.full((1, 1, 1), 99.0))  # the window ending at i = 3 moves s_3 to 99
end_copy, start_copy = buffer._storage[2][2].item(), buffer._storage[3][1].item()
print(f"s_3 as the end of transition 3: {end_copy}; s_3 as the start of transition 4: {start_copy}")
assert end_copy == 99.0 and start_copy == 3.0
