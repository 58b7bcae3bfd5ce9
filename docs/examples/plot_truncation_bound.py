"""
Miller & Hardt's truncation bound against the observed error
============================================================

For a λ-contractive system, the truncated model (the state restarted k steps back, Miller &
Hardt 2018, eq. (3)) stays within the bound of Lemma 1, and its gradient within the bound of
Lemma 2 with the constants of its proof. ``evaluate_instance`` measures the error at every k
and instantiates the bounds (derived with sympy in ``theory/truncation.py``) on the instance;
the claims ``truncation.state-bound`` and ``truncation.gradient-bound`` decide on the same data.
"""

import matplotlib.pyplot as plt
import torch

from verify.testing.strategies import contractive_problem
from verify.truncation import evaluate_instance

P, theta = contractive_problem("elman-tanh", lam=0.6, n=4, d=2, T=30, generator=torch.Generator().manual_seed(0))
ev = evaluate_instance(P, theta, ks=range(1, 16), parts=("state", "model"), with_rate=False)
print(f"lambda = {ev.lam:.3f}; " + ", ".join(f"{n}: holds={s.holds}" for n, s in ev.series.items()))

fig, axes = plt.subplots(1, 2, figsize=(8, 3.5), sharex=True)
for ax, (name, s) in zip(axes, ev.series.items()):
    ax.semilogy(s.ks, [max(e, 1e-18) for e in s.errors], "o-", ms=3, label="observed error")
    ax.semilogy(s.ks, s.bounds, "--", label="bound (proof's constants)")
    ax.set_xlabel("truncation length k")
    ax.set_title({"state": "Lemma 1: states", "model": "Lemma 2: gradient"}.get(name, name))
    ax.legend(fontsize=8)
fig.suptitle(f"Elman tanh, λ = {ev.lam:.2f}")
fig.tight_layout()
