"""
RTRL agrees with BPTT to round-off
==================================

RTRL carries the influence matrices ∂s_t/∂θ forward (Tallec & Ollivier 2017, eq. (4)); with
frozen parameters its per-step gradients ∂ℓ_t/∂θ must equal those of float64 backpropagation
through time. This is what the claim ``rtrl.exact`` checks; here on one small GRU, next to
truncated BPTT with k = 1 and k = 4, which must *not* agree (they drop the long-term part).
"""

import matplotlib.pyplot as plt
import torch

from verify.estimators import RTRL, TBPTT, run_estimator
from verify.oracles.bptt import per_step_gradients
from verify.testing.strategies import random_problem

P, theta = random_problem("gru", n=4, d=2, T=30, generator=torch.Generator().manual_seed(0))
exact = per_step_gradients(P, theta)  # (T, p): float64 BPTT


def relative_error(estimator):
    G = run_estimator(estimator, P, theta, torch.Generator().manual_seed(1), samples=1)[:, 0]  # (T, p)
    return ((G - exact).norm(dim=1) / exact.norm(dim=1)).numpy()


errors = {"RTRL": relative_error(RTRL()), "TBPTT(k=4)": relative_error(TBPTT(4)), "TBPTT(k=1)": relative_error(TBPTT(1))}
print({name: float(e.max()) for name, e in errors.items()})

fig, ax = plt.subplots(figsize=(6, 3.5))
for name, e in errors.items():
    ax.semilogy(range(1, P.T + 1), e.clip(min=1e-18), marker="o", ms=3, label=name)
ax.axhline(1e-11, color="grey", ls="--", lw=1, label="design target for RTRL (1e-11)")
ax.set_xlabel("time step t")
ax.set_ylabel("‖ĝ_t − ∂ℓ_t/∂θ‖ / ‖∂ℓ_t/∂θ‖")
ax.set_title("per-step gradient error against float64 BPTT (GRU, n = 4)")
ax.legend(fontsize=8)
fig.tight_layout()
