r"""Fixed Point Propagation (FPP): explicit state variables for training RNNs online.

Paper: ``fpp-explicit-state-variables.md``. Modules:

* :mod:`verify.fpp.objective` -- the objective eq. (5)/(6), the penalty form eq. (11),
  the explicit per-sample gradients eq. (7), sampling i ~ uniform{T..n} (Lemma 3);
* :mod:`verify.fpp.sgd` -- projected SGD on a fixed buffer eq. (8)-(9), the stopping
  time R ~ P_N of Thm 1 and the gradient mapping;
* :mod:`verify.fpp.kkt` -- the RNN objective eq. (10), constraints eq. (19), Lemma 1's
  multipliers, the Lagrangian eq. (16), a Newton solver with exact Hessians and the
  penalty path of Thm 2;
* :mod:`verify.fpp.online` -- Algorithm 1 (sliding buffer, M updates, mini-batch B),
  "FPP without state update" and an online truncated-BPTT trainer;
* :mod:`verify.fpp.envs` -- CycleWorld and Stochastic World (§5, App. D);
* :mod:`verify.fpp.problems`, :mod:`verify.fpp.exactness`, :mod:`verify.fpp.experiments`,
  :mod:`verify.fpp.reproduction` -- the instances and experiments behind the ``fpp.*`` checks;
* :mod:`verify.fpp.judging` -- the tables the §5 reproduction checks judge (summaries, paired tests).

>>> import torch
>>> from verify.testing.strategies import random_problem
>>> from verify.fpp import FPPObjective, full_gradient, autograd_gradient
>>> P, theta = random_problem("elman-tanh", T=8, generator=torch.Generator().manual_seed(0))
>>> obj = FPPObjective(P, T=2, lam=1.0)
>>> x = obj.rollout_variables(theta)
>>> bool(torch.allclose(full_gradient(obj, x).theta, autograd_gradient(obj, x).theta))
True
"""

from __future__ import annotations

from verify.fpp.envs import cycle_world, cycle_world_baseline, stochastic_world, stochastic_world_reference_losses
from verify.fpp.kkt import (
    constraint_jacobian,
    constraint_residuals,
    kkt_path,
    lagrangian,
    lemma1_multipliers,
    multiplier_estimates,
    newton_minimize,
    rnn_gradient,
    rnn_objective,
    solve_rnn_stationary,
)
from verify.fpp.objective import (
    FPPObjective,
    FPPVariables,
    autograd_gradient,
    eq7_gradients,
    flatten_variables,
    full_gradient,
    index_distribution,
    minibatch_gradient,
    objective,
    penalty_objective,
    predicted_states,
    sample_gradient,
    sample_indices,
    sample_loss,
    sample_losses,
    unflatten_variables,
)
from verify.fpp.online import METHODS, OnlineConfig, fpp_step, init_online_state, model_problem, run_online, tbptt_step
from verify.fpp.sgd import gradient_mapping, project_ball, projected_sgd, sample_stopping_time, stopping_time_pmf

__all__ = [
    "METHODS",
    "FPPObjective",
    "FPPVariables",
    "OnlineConfig",
    "autograd_gradient",
    "constraint_jacobian",
    "constraint_residuals",
    "cycle_world",
    "cycle_world_baseline",
    "eq7_gradients",
    "flatten_variables",
    "fpp_step",
    "full_gradient",
    "gradient_mapping",
    "index_distribution",
    "init_online_state",
    "kkt_path",
    "lagrangian",
    "lemma1_multipliers",
    "minibatch_gradient",
    "model_problem",
    "multiplier_estimates",
    "newton_minimize",
    "objective",
    "penalty_objective",
    "predicted_states",
    "project_ball",
    "projected_sgd",
    "rnn_gradient",
    "rnn_objective",
    "run_online",
    "sample_gradient",
    "sample_indices",
    "sample_loss",
    "sample_losses",
    "sample_stopping_time",
    "solve_rnn_stationary",
    "stochastic_world",
    "stochastic_world_reference_losses",
    "stopping_time_pmf",
    "tbptt_step",
    "unflatten_variables",
]
