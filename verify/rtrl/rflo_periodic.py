r"""Murray 2019, Fig. 2: the periodic output task, an RNN trained by RFLO, BPTT and the two partial approximations.

Paper: J. M. Murray, "Local online learning in recurrent networks with random feedback", eLife 8:e43299 (2019),
doi 10.7554/eLife.43299, Fig. 2 and its caption: "an RNN with N = 30 recurrent units and no external input,
trained to produce a one-dimensional periodic output with period of duration T = 20τ [...] or T = 160τ, where
τ = 10 is the RNN time constant"; "solid line is median loss over nine realizations"; (b) "the loss function at
the end of training for target outputs having different periods", the untrained RNN's loss in gray; (c) "the
normalized alignment between the vector of readout weights W_out and the vector of feedback weights B during
training with RFLO learning"; (d) the loss "with T = 80τ for BPTT and RFLO, as well as versions of RFLO in
which locality is enforced without random feedback [...] or random feedback is used without enforcing locality".

**The network** (the paper's rate RNN, discretised with Δt = 1 step, α = Δt/τ = 1/τ; no input):

.. math:: u_t = W h_{t-1},\qquad h_t = (1-\alpha)\,h_{t-1} + \alpha\tanh(u_t),\qquad y_t = W^{out} h_t

-- :class:`verify.model.cells.LeakyElmanCell` with U = 0, b = 0, and a linear readout. One *trial* is one period
of P steps from the same initial state :math:`h_0`; the loss of a trial is :math:`L = \frac{1}{2P}\sum_t
\varepsilon_t^2`, :math:`\varepsilon_t = y^*_t - y_t`, and the weights move once per trial, at its end.

**The four learning rules** are one adjoint recursion with two switches (this is exact algebra for weights held
fixed within a trial, not an approximation of it): the feedback matrix F that carries the error into the
network (:math:`F = (W^{out})^\top`: symmetric, BPTT's; :math:`F = B`: a fixed random matrix, Murray's random
feedback) and whether the recurrent (nonlocal) term of the adjoint is kept:

.. math::
    z_t = F\varepsilon_t + (1-\alpha)\,z_{t+1} + c\,\alpha W^\top\big(\tanh'(u_{t+1})\odot z_{t+1}\big),\qquad
    \Delta W = \frac{\eta\,\alpha}{P}\sum_t \big(z_t\odot\tanh'(u_t)\big)\,h_{t-1}^\top,\qquad
    \Delta W^{out} = \frac{\eta}{P}\sum_t \varepsilon_t h_t^\top .

* BPTT: :math:`F = (W^{out})^\top`, c = 1 (the exact gradient of L; checked against autograd in the tests);
* RFLO: F = B, c = 0. Summing Murray's eligibility trace :math:`p_t = (1-\alpha)p_{t-1} + \alpha\tanh'(u_t)
  h_{t-1}^\top` against :math:`B\varepsilon_t` over the trial (his RFLO update, summed at the trial's end) gives
  exactly this :math:`\Delta W` with :math:`z_t = \sum_{s\ge t}(1-\alpha)^{s-t}B\varepsilon_s` (checked against the
  toolkit's :class:`verify.estimators.local.RFLO` in the tests);
* "locality without random feedback" (Fig. 2(d), magenta): :math:`F = (W^{out})^\top`, c = 0;
* "random feedback without locality" (Fig. 2(d), cyan): F = B, c = 1 (RTRL with B in place of
  :math:`(W^{out})^\top`, which for an end-of-trial update equals this backward form).

Baselines and controls: ``readout`` (W frozen, only :math:`W^{out}` learned: what a fixed random reservoir
reaches), the frozen network (no update: its loss is the untrained one, Fig. 2(b)'s gray line) and
``bptt-flipped`` (gradient *ascent* on W, :math:`W^{out}` learned as usual) must not beat the reservoir.
``rflo-flipped`` (RFLO with the sign of :math:`\Delta W` reversed) is *not* such a control: reversing the sign is
RFLO with the feedback matrix -B, another random feedback matrix, and the readout then aligns with -B (seen in the
pilot: it learns as well as RFLO); it is run to show that the alignment follows the feedback.

**Set-up not printed in the caption** (taken from the authors' published example, the eLife article's source code
file "RFLO_Example", github.com/murray-lab/rflo-learning; the paper's Methods were not available here to check):
the target :math:`y^*_t = \sin(2\pi t/P) + 0.5\sin(4\pi t/P) + 0.25\sin(8\pi t/P)`; :math:`W_{ij}\sim
N(0, g^2/N)`, g = 1.5; :math:`W^{out}_i \sim U(-0.1, 0.1)/\sqrt N`; :math:`B_i \sim N(0, 1)`; :math:`h_0 = 0.1`;
the per-trial update above with one learning rate η = 0.03 for W and :math:`W^{out}` (the example's). The number
of trials is the design's (:data:`SIZES`): the paper's is not in the caption.

All runs of one period are one batched computation (float64 numpy): every (learner, realization) is a row; the
realizations share W, :math:`W^{out}`, B across learners and across periods (paired comparisons).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from verify.errors import InvalidArgument

__all__ = [
    "LEARNERS",
    "RULES",
    "SIZES",
    "PeriodicScale",
    "adjoint_updates",
    "init_realization",
    "run_period",
    "target",
]

#: learner -> (feedback "B" or "W_out^T", nonlocal term kept, recurrent update sign); Fig. 2(a)-(d) and the controls
RULES: dict[str, tuple[str, bool, float]] = {
    "bptt": ("W_out^T", True, 1.0),
    "rflo": ("B", False, 1.0),
    "local-only": ("W_out^T", False, 1.0),  # Fig. 2(d) magenta: locality enforced, no random feedback
    "feedback-only": ("B", True, 1.0),  # Fig. 2(d) cyan: random feedback, locality not enforced
    "readout": ("B", False, 0.0),  # W frozen: only the readout learns (the fixed-reservoir baseline)
    "bptt-flipped": ("W_out^T", True, -1.0),  # control: gradient ascent on W (the readout still descends)
    "rflo-flipped": ("B", False, -1.0),  # RFLO's recurrent update sign-flipped = RFLO with feedback -B (module)
}
#: the learners run at every period; Fig. 2(d)'s two partial approximations run at :attr:`PeriodicScale.fig2d`
LEARNERS = ("bptt", "rflo", "readout", "bptt-flipped", "rflo-flipped")
#: the network and task constants of Fig. 2's caption and the authors' example
N_UNITS, TAU, GAIN, H0 = 30, 10, 1.5, 0.1
#: a trial loss above this (or not finite) is a diverged run
DIVERGED = 1e6


@dataclass(frozen=True)
class PeriodicScale:
    """One scale of the sweep: periods (in units of τ), realizations, trials per run, learning rate, the period
    of Fig. 2(d), the fraction of the last trials whose mean loss is the final loss."""

    periods: tuple[int, ...]
    realizations: int
    trials: int
    eta: float
    fig2d: int
    n: int = N_UNITS
    tau: int = TAU
    window: float = 0.05


#: ``paper``: Fig. 2's network, nine realizations, periods 20τ-160τ; 10 000 trials (the authors' example's count;
#: the paper's is not in the caption). ``full``: the same with 1000 trials and without 120τ (a reduced scale).
#: ``ci``: a seconds-long smoke run.
SIZES: dict[str, PeriodicScale] = {
    "paper": PeriodicScale((20, 40, 80, 120, 160), 9, 10_000, 0.03, 80),
    "full": PeriodicScale((20, 40, 80, 160), 9, 1_000, 0.03, 80),
    "ci": PeriodicScale((2, 4), 3, 40, 0.03, 4, n=8),
}


def target(steps: int) -> np.ndarray:
    r""":math:`y^*_t = \sin(2\pi t/P) + 0.5\sin(4\pi t/P) + 0.25\sin(8\pi t/P)`, t = 1..P (the authors' example)."""
    t = np.arange(1, steps + 1) / steps
    return np.sin(2 * np.pi * t) + 0.5 * np.sin(4 * np.pi * t) + 0.25 * np.sin(8 * np.pi * t)


def init_realization(n: int, seed: int, realization: int) -> dict[str, np.ndarray]:
    """W ~ N(0, g²/n), W_out ~ U(-0.1, 0.1)/sqrt(n), B ~ N(0, 1) of one realization (independent of the period)."""
    rng = np.random.default_rng([seed, realization])
    return {
        "W": GAIN * rng.standard_normal((n, n)) / math.sqrt(n),
        "W_out": 0.1 * (2 * rng.random(n) - 1) / math.sqrt(n),
        "B": rng.standard_normal(n),
    }


def _forward(W: np.ndarray, w_out: np.ndarray, h0: np.ndarray, y_star: np.ndarray, alpha: float) -> tuple[Any, ...]:
    """Rows m, time-major: u (P, m, n), h (P + 1, m, n) with h[0] = h0, the errors eps (P, m)."""
    m, n = h0.shape
    P = y_star.shape[0]
    u = np.empty((P, m, n))
    h = np.empty((P + 1, m, n))
    h[0] = h0
    Wc = np.ascontiguousarray(W)
    tmp = np.empty((m, n))
    for t in range(P):
        np.matmul(Wc, h[t, :, :, None], out=u[t, :, :, None])  # u_t = W h_{t-1}
        np.tanh(u[t], out=tmp)
        tmp *= alpha
        np.multiply(h[t], 1.0 - alpha, out=h[t + 1])
        h[t + 1] += tmp  # h_t = (1 - alpha) h_{t-1} + alpha tanh(u_t)
    y = np.einsum("mi,tmi->tm", w_out, h[1:])
    return u, h, y_star[:, None] - y


def adjoint_updates(
    W: np.ndarray,
    w_out: np.ndarray,
    B: np.ndarray,
    h0: np.ndarray,
    y_star: np.ndarray,
    alpha: float,
    feedback_is_b: np.ndarray,
    nonlocal_: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""One trial of every row: the descent directions :math:`\frac{1}{P}\sum_t\ldots` for W and :math:`W^{out}` (the
    module's adjoint recursion, before η) and the errors :math:`\varepsilon_t`, shape (m, P). Shapes: W (m, n, n),
    w_out, B, h0 (m, n); ``feedback_is_b``, ``nonlocal_`` (m,) booleans."""
    u, h, eps = _forward(W, w_out, h0, y_star, alpha)
    P, m, n = u.shape
    F = np.where(feedback_is_b[:, None], B, w_out)  # the feedback vector (one output)
    d = 1.0 - np.tanh(u) ** 2  # tanh'(u_t)
    Fe = eps[:, :, None] * F[None]  # F eps_t, (P, m, n)
    dz = np.empty((P, m, n))  # z_t * tanh'(u_t)
    rows = np.flatnonzero(nonlocal_)
    if rows.size and rows[-1] - rows[0] + 1 == rows.size:  # contiguous rows: a view, no copy per step
        rows = slice(int(rows[0]), int(rows[-1]) + 1)  # type: ignore[assignment]
    WT = np.ascontiguousarray(np.swapaxes(W[rows], 1, 2))
    has_nonlocal = bool(nonlocal_.any())
    z = Fe[P - 1].copy()
    dz[P - 1] = z * d[P - 1]
    for t in range(P - 2, -1, -1):
        z *= 1.0 - alpha  # the leak: kept by every rule
        z += Fe[t]
        if has_nonlocal:  # the nonlocal term, rows with c = 1 only
            z[rows] += alpha * np.matmul(WT, dz[t + 1, rows, :, None])[..., 0]
        np.multiply(z, d[t], out=dz[t])
    dW = alpha / P * np.matmul(dz.transpose(1, 2, 0), h[:-1].transpose(1, 0, 2))  # sum_t (z_t * tanh') h_{t-1}^T
    dw_out = np.matmul(eps.T[:, None, :], h[1:].transpose(1, 0, 2))[:, 0] / P  # sum_t eps_t h_t^T
    return dW, dw_out, eps.T


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine: Murray's "normalized alignment" of W_out and B (Fig. 2(c))."""
    out: np.ndarray = np.einsum("mi,mi->m", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return out


def _learners(
    period: int, scale: str | PeriodicScale, learners: tuple[str, ...]
) -> tuple[PeriodicScale, tuple[str, ...]]:
    """The scale and the learners of one period's run (bad input named)."""
    sc = SIZES.get(scale) if isinstance(scale, str) else scale
    if not isinstance(sc, PeriodicScale):
        raise InvalidArgument("scale", scale, f"must be one of {tuple(SIZES)} or a PeriodicScale")
    if isinstance(period, bool) or not isinstance(period, int) or period < 1:
        raise InvalidArgument("period", period, "must be an integer >= 1 (in units of tau)")
    names = learners or LEARNERS + (("local-only", "feedback-only") if period == sc.fig2d else ())
    bad = [x for x in names if x not in RULES]
    if bad:
        raise InvalidArgument("learners", bad, f"must be among {tuple(RULES)}")
    return sc, names


def run_period(
    period: int, scale: str | PeriodicScale, seed: int = 0, learners: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Train every learner (``learners``, default :data:`LEARNERS`, plus Fig. 2(d)'s two at ``scale.fig2d``) on every
    realization at one ``period`` (in units of τ) for ``scale.trials`` trials.

    Returns, per learner, per realization: the untrained loss (the first trial's), the final loss (mean over the last
    ``window`` of the trials), the readout alignment cos(W_out, B) before and after training, the trial it diverged
    at (None), and a log-spaced loss curve of the median over realizations.
    """
    sc, names = _learners(period, scale, learners)
    names = tuple(sorted(names, key=lambda x: not RULES[x][1]))  # nonlocal learners first: contiguous rows
    start = time.perf_counter()
    n, R, alpha, P = sc.n, sc.realizations, 1.0 / sc.tau, period * sc.tau
    inits = [init_realization(n, seed, r) for r in range(R)]
    rows = [(name, r) for name in names for r in range(R)]
    W, w_out, B = (np.stack([inits[r][key] for _, r in rows]) for key in ("W", "W_out", "B"))
    h0 = np.full((len(rows), n), H0)
    fb = np.array([RULES[name][0] == "B" for name, _ in rows])
    nl = np.array([RULES[name][1] for name, _ in rows])
    sign = np.array([RULES[name][2] for name, _ in rows])[:, None, None]
    y_star = target(P)
    align0 = _cos(w_out, B)
    losses = np.full((sc.trials, len(rows)), np.inf)
    diverged = np.full(len(rows), -1)
    for k in range(sc.trials):
        with np.errstate(all="ignore"):
            dW, dw_out, eps = adjoint_updates(W, w_out, B, h0, y_star, alpha, fb, nl)
            loss = 0.5 * np.mean(eps**2, axis=1)
        diverged[(~np.isfinite(loss) | (loss > DIVERGED)) & (diverged < 0)] = k + 1
        live = diverged < 0
        losses[k, live] = loss[live]
        W[live] += sc.eta * (sign * dW)[live]  # one update per trial, at its end
        w_out[live] += sc.eta * dw_out[live]
    align1 = _cos(w_out, B)
    final = losses[-max(1, round(sc.window * sc.trials)) :].mean(axis=0)
    idx = sorted({round(float(x)) - 1 for x in np.geomspace(1, sc.trials, 40)})
    out: dict[str, Any] = {"period": period, "steps": P, "trials": sc.trials, "eta": sc.eta, "n": n,
                           "realizations": R, "seed": seed, "learners": {}}  # fmt: skip
    for name in names:
        sel = [i for i, (nm, _) in enumerate(rows) if nm == name]
        out["learners"][name] = {
            "untrained": [float(losses[0, i]) for i in sel],
            "final": [float(final[i]) for i in sel],
            "align_start": [float(align0[i]) for i in sel],
            "align_end": [float(align1[i]) for i in sel],
            "diverged_at": [int(diverged[i]) if diverged[i] > 0 else None for i in sel],
            "curve_trials": [k + 1 for k in idx],
            "curve_median": [float(np.median(losses[k, sel])) for k in idx],
        }
    out["seconds"] = time.perf_counter() - start
    return out
