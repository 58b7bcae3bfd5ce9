"""UORO's forwarddiff by a finite difference with eps = 1e-7, as both torch repositories compute it
(VincentLiu3/fpp model/torch_uoro.py l. 118-120; petered/uoro-demo uoro_demo/uoro.py l. 73-75):
``(F(s + eps * s~) - F(s)) / eps``, against the exact tangent ``(1 - h^2) * (W_hh s~)`` (Tallec & Ollivier eq. (1):
forwarddiff is the limit). In float64 the error is ~1e-8; in float32 -- the dtype both repositories run in (torch's
default; fpp's ``initialize_state`` casts ``.float()``) -- eps = 1e-7 is about one float32 spacing of s, and the
difference is mostly rounding.

Run: python reports/gallery-notes/repro/uoro_fd_float32.py (torch only: the formula is restated, nothing is imported).
"""

import torch


def relative_errors(dtype: torch.dtype, reps: int = 200, n: int = 4, d: int = 2) -> list[float]:
    torch.manual_seed(0)
    out = []
    for _ in range(reps):
        rnn = torch.nn.RNN(d, n).to(dtype)
        x, s = torch.randn(1, 1, d, dtype=dtype), torch.randn(1, 1, n, dtype=dtype).tanh()
        s_tilde = torch.randn(n, dtype=dtype)
        with torch.no_grad():
            h = rnn(x, s)[1]
            fd = ((rnn(x, s + s_tilde * 1e-7)[1] - h) / 1e-7).double().view(-1)
            h = h.double().view(-1)
            exact = (1 - h * h) * (rnn.weight_hh_l0.double() @ s_tilde.double())
        out.append(float((fd - exact).norm() / exact.norm()))
    return sorted(out)


for dt in (torch.float32, torch.float64):
    e = relative_errors(dt)
    print(f"{dt}: relative error of the finite difference, median {e[100]:.2e}, 90th percentile {e[180]:.2e}")
