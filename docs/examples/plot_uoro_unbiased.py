"""
UORO is unbiased: the mean of its draws closes in on the exact gradient
=======================================================================

UORO's rank-one estimate g̃ is random, and unbiased: E g̃ = ∇L (Tallec & Ollivier 2017,
Prop. 1). The relative error of the mean of M draws falls like 1/√M and does not level off at a
bias. (The statistical claims test this with stated error rates; see "What a verdict
guarantees" in the explanation pages.)
"""

import math

import matplotlib.pyplot as plt
import torch

from verify.estimators import UORO, run_estimator
from verify.oracles.bptt import per_step_gradients
from verify.testing.strategies import random_problem

P, theta = random_problem("elman-tanh", n=3, d=2, T=6, generator=torch.Generator().manual_seed(0))
g = per_step_gradients(P, theta).sum(0)  # the exact total gradient
draws = run_estimator(UORO(), P, theta, torch.Generator().manual_seed(1), samples=20_000).sum(0)  # (M, p)

Ms = [10, 30, 100, 300, 1000, 3000, 10_000, 20_000]
errors = [float((draws[:m].mean(0) - g).norm() / g.norm()) for m in Ms]
print(dict(zip(Ms, [f"{e:.3g}" for e in errors])))

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.loglog(Ms, errors, "o-", label="‖mean of M draws − ∇L‖ / ‖∇L‖")
ax.loglog(Ms, [errors[0] * math.sqrt(Ms[0] / m) for m in Ms], "--", color="grey", label="∝ 1/√M")
ax.set_xlabel("draws M")
ax.set_ylabel("relative error")
ax.set_title("UORO on Elman tanh (n = 3, T = 6)")
ax.legend(fontsize=8)
fig.tight_layout()
