"""Claims of the ``reference`` family: the exact references agree with each other.

These are not claims of a paper but the premise of every other check: three
independent derivative computations (reverse mode twice, forward mode, complex
step, extrapolated finite differences) must agree within predicted budgets before
any algorithm is compared against them (rnn-verify design notes, 'Reference' and
'Numerical policy': :mod:`theory.notes`).
"""

from __future__ import annotations

from theory.catalog import Claim

_ASSUME = (
    "float64 throughout (checked: the references refuse other dtypes)",
    "well-conditioned instance: the budget scales with the measured cancellation "
    "kappa = sum_t ||c_t|| / ||g|| and the step-Jacobian norms, reported with the result",
)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="reference.adjoint",
        title="explicit adjoint recursion = autograd BPTT",
        paper="Tallec & Ollivier 2017",
        where="§1 (backpropagation as row-vector times Jacobian); rnn-verify design notes, 'Reference'",
        statement="The gradient computed by a loop of one-step vector-Jacobian products equals "
        "autograd through the unrolled graph, for the total loss and every per-step loss, on every cell.",
        math="a_t = dl_t/ds_t + a_{t+1} df/ds(s_t, x_{t+1});  grad L = sum_t a_t df/dtheta(s_{t-1}, x_t) + dl_t/dtheta",
        assumptions=_ASSUME,
        check="verify.checks.reference.check_adjoint",
    ),
    Claim(
        id="reference.influence",
        title="reverse-mode influence matrices = forward-mode Jacobian",
        paper="Tallec & Ollivier 2017",
        where="eq. (4) (the quantity ds_t/dtheta)",
        statement="Influence matrices ds_t/dtheta computed by reverse mode on the unrolled graph equal "
        "torch.func.jacfwd of the unrolled states.",
        math="ds_t/dtheta (reverse) = ds_t/dtheta (forward)  for t = 1..T",
        assumptions=_ASSUME,
        check="verify.checks.reference.check_influence",
    ),
    Claim(
        id="reference.complex-step",
        title="complex-step derivatives = reverse-mode gradients (analytic cells)",
        paper="Tallec & Ollivier 2017",
        where="eq. (1) (tangent forward propagation, evaluated by the complex step)",
        statement="Im f(theta + i h v)/h with h = 1e-20 equals g.v for the total loss and (ds_t/dtheta) v "
        "for the states, for every analytic cell; relu is refused, not passed.",
        math="Im L(theta + i h v) / h = grad L . v + O(h^2)",
        assumptions=(*_ASSUME, "cell built from analytic operations (tanh, sigmoid, linear); relu refused"),
        check="verify.checks.reference.check_complex_step",
    ),
    Claim(
        id="reference.finite-difference",
        title="Richardson-extrapolated central differences = reverse-mode gradients",
        paper="Tallec & Ollivier 2017",
        where="eq. (1) (forwarddiff as a limit of differences)",
        statement="Directional derivatives by Richardson-extrapolated central differences agree with the "
        "BPTT gradient within their own error estimate, on every cell including relu.",
        math="|D_v^Richardson - grad L . v| <= 2 err_est + round-off budget",
        assumptions=(*_ASSUME, "piecewise smooth: steps are reduced until no relu kink is crossed"),
        check="verify.checks.reference.check_finite_difference",
    ),
)
