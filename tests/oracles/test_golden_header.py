"""Issue 25: every golden array can be rebuilt from the header alone.

An independent evaluator: it reads ``reports/golden/golden.json`` (the definitions:
symbols, the numpy statements of each cell's step, obs, readout and loss, the FPP
settings) and the four input arrays of each case (theta, inputs, targets, s0) from
``golden.npz``, and rebuilds every stored quantity -- the forward pass by the
header's statements, every derivative by the complex step (exact to round-off for
these analytic formulas), RTRL influences as d s_t/d theta of the rollout -- without
importing anything of ``verify``. Each rebuilt array must match the stored one by the
header's stated norm and tolerance.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "reports" / "golden"
HEADER = json.loads((GOLDEN / "golden.json").read_text())
INPUTS = ("theta", "inputs", "targets", "s0")
#: the numpy names the header's 'numpy_names' lists
NUMPY = {k: getattr(np, k) for k in ("tanh", "exp", "log", "cos", "sum", "where", "real", "amax", "eye", "array")}
NUMPY["concatenate"] = np.concatenate
H_STEP = 1e-30  # complex step: f'(x) = Im f(x + ih) / h, no cancellation


class HeaderModel:
    """The model of one case, built from its header entry only."""

    def __init__(self, case: dict[str, Any]) -> None:
        d = case["definitions"]
        self.ns: dict[str, Any] = dict(NUMPY)
        for name, expr in d["functions"].items():
            self.ns[name] = eval(f"lambda a: {expr}", self.ns)
        self.layout = case["layout"]
        self.step = compile("\n".join(d["step"]["numpy"]), "step", "exec")
        self.head = compile("\n".join([d["obs"]["numpy"], d["readout"]["numpy"], d["loss"]["numpy"]]), "head", "exec")

    def params(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        return {
            e["name"].replace(".", "_"): theta[e["offset"] : e["offset"] + e["size"]].reshape(e["shape"])
            for e in self.layout
        }

    def F(self, theta: np.ndarray, s: np.ndarray, x: np.ndarray) -> np.ndarray:
        env = {**self.ns, **self.params(theta), "s": s, "x": x}
        exec(self.step, env)
        return np.asarray(env["s_new"])

    def loss(self, theta: np.ndarray, s: np.ndarray, q: np.ndarray) -> Any:
        env = {**self.ns, **self.params(theta), "s": s, "q": q}
        exec(self.head, env)
        return env["l"]


def complex_step(f: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    """Jacobian of f at x, shape f(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size, dtype=np.complex128)
        e[j] = 1j * H_STEP
        cols.append(np.imag(np.asarray(f(x.astype(np.complex128) + e.reshape(x.shape)))) / H_STEP)
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(f(x)) + x.shape)


def rebuild(case: dict[str, Any], a: dict[str, np.ndarray], ks: list[int]) -> dict[str, np.ndarray]:
    """Every quantity of the case, from the header's definitions and the input arrays."""
    m = HeaderModel(case)
    theta, xs, qs, s0 = a["theta"], a["inputs"], a["targets"], a["s0"]
    T = xs.shape[0]

    def rollout(th: np.ndarray) -> list[np.ndarray]:
        s = [s0.astype(th.dtype)]
        for t in range(1, T + 1):
            s.append(m.F(th, s[-1], xs[t - 1]))
        return s

    def losses(th: np.ndarray) -> np.ndarray:
        s = rollout(th)
        return np.array([m.loss(th, s[t], qs[t - 1]) for t in range(1, T + 1)])

    def run(th: np.ndarray, start: np.ndarray, first: int, last: int) -> np.ndarray:
        """F applied for steps first..last from ``start``."""
        s = start
        for tau in range(first, last + 1):
            s = m.F(th, s, xs[tau - 1])
        return s

    def truncated(th: np.ndarray, t: int, k: int) -> np.ndarray:
        start = s0.astype(th.dtype) if t - k <= 0 else np.zeros_like(s0, dtype=th.dtype)
        return run(th, start, max(t - k, 0) + 1, t)

    states = np.array(rollout(theta))
    out = {
        "states": states,
        "losses": losses(theta),
        "total_loss": np.array(losses(theta).sum()),
        "gradient": complex_step(lambda th: losses(th).sum(), theta),
        "per_step_gradients": complex_step(losses, theta),
        "influence": complex_step(lambda th: np.array(rollout(th)[1:]), theta),
    }
    for k in ks:
        out[f"truncated_model_states_k{k}"] = np.array([truncated(theta, t, k) for t in range(1, T + 1)])
        out[f"truncated_model_gradient_final_k{k}"] = complex_step(
            lambda th, k=k: m.loss(th, truncated(th, T, k), qs[T - 1]), theta
        )
        out[f"truncated_model_gradient_total_k{k}"] = complex_step(
            lambda th, k=k: sum(m.loss(th, truncated(th, t, k), qs[t - 1]) for t in range(1, T + 1)), theta
        )
        out[f"tbptt_gradient_total_k{k}"] = sum(
            complex_step(
                lambda th, t=t, k=k: m.loss(th, run(th, states[max(t - k, 0)], max(t - k, 0) + 1, t), qs[t - 1]), theta
            )
            for t in range(1, T + 1)
        )
    fpp = case["definitions"]["fpp"]
    if isinstance(fpp, dict):
        i, j = np.meshgrid(np.arange(T + 1), np.arange(states.shape[-1]), indexing="ij")
        S0 = states + eval(fpp["states_offset"], dict(NUMPY), {"i": i, "j": j})
        out["fpp_states"] = S0
        lam = fpp["lambda"]

        def L(th: np.ndarray, S: np.ndarray, i: int, mm: int) -> Any:
            s_hat = run(th, S[i - mm], i - mm + 1, i)
            return m.loss(th, s_hat, qs[i - 1]) + lam / 2 * np.sum((S[i] - s_hat) ** 2)

        for mm in fpp["trajectory_lengths"]:
            idx = range(mm, T + 1)
            out[f"fpp_T{mm}_sample_losses"] = np.array([L(theta, S0, i, mm) for i in idx])
            out[f"fpp_T{mm}_sample_theta_gradients"] = np.array(
                [complex_step(lambda th, i=i, mm=mm: L(th, S0, i, mm), theta) for i in idx]
            )
            out[f"fpp_T{mm}_sample_state_gradients"] = np.array(
                [complex_step(lambda S, i=i, mm=mm: L(theta, S, i, mm), S0) for i in idx]
            )
    return out


@pytest.mark.parametrize("case", HEADER["cases"], ids=[c["name"] for c in HEADER["cases"]])
def test_every_array_rebuilt_from_the_header_alone(case: dict[str, Any]) -> None:
    with np.load(GOLDEN / "golden.npz") as z:
        inputs = {q: z[f"{case['name']}__{q}"] for q in INPUTS}
        stored = {q: z[f"{case['name']}__{q}"] for q in case["arrays"] if q not in INPUTS}
    rebuilt = rebuild(case, inputs, HEADER["ks"])
    assert set(rebuilt) == set(stored), "every stored quantity rebuilt, nothing else"
    rtol = HEADER["check_rtol"]
    for q, ref in stored.items():
        mine = rebuilt[q]
        assert list(mine.shape) == case["arrays"][q]["shape"] == list(ref.shape), q
        err, scale = float(np.max(np.abs(mine - ref), initial=0.0)), float(np.max(np.abs(ref), initial=0.0))
        assert err <= rtol * scale if scale > 0 else err <= rtol, f"{q}: {err:.2e} vs {rtol} * {scale:.2e}"


def test_the_evaluator_fails_on_a_wrong_formula() -> None:
    """The rebuild is not vacuous: the header's step with a transposed W no longer matches."""
    case = json.loads(json.dumps(next(c for c in HEADER["cases"] if c["name"] == "elman_tanh")))
    case["definitions"]["step"]["numpy"] = [
        s.replace("cell_W.T", "cell_W") for s in case["definitions"]["step"]["numpy"]
    ]
    with np.load(GOLDEN / "golden.npz") as z:
        inputs = {q: z[f"elman_tanh__{q}"] for q in INPUTS}
        ref = z["elman_tanh__influence"]
    got = rebuild(case, inputs, [1])["influence"]
    assert np.max(np.abs(got - ref)) > 1e-3 * np.max(np.abs(ref))


def test_the_header_defines_what_it_uses() -> None:
    """Symbols, a formula and the stored shape for every array, J_0, the norm, why a case has no FPP arrays."""
    assert "max_i |a_i - r_i| <= check_rtol * max_i |r_i|" in HEADER["check_norm"]
    conv = HEADER["conventions"]
    assert "J_0 = 0" in conv["influence"] and "TOTAL derivative" in conv["per_step_gradients"]
    for case in HEADER["cases"]:
        d = case["definitions"]
        assert {"T", "n", "d", "p", "B", "obs", "x_t", "q_t", "F", "J_t"} <= set(d["symbols"])
        for q in case["arrays"]:
            if q in INPUTS:
                continue
            formula = d["quantities"][q]
            shape = re.search(r"shape (\(.*\)|\[\])", formula)
            assert shape, f"{case['name']}.{q}: no shape in {formula!r}"
        assert case["arrays"]["total_loss"]["shape"] == []
        if case["sizes"]["batch"]:
            assert isinstance(d["fpp"], str) and "batched" in d["fpp"]
            assert not any(q.startswith("fpp") for q in case["arrays"])
        else:
            assert d["fpp"]["lambda"] == 1.0 and "(lambda/2)" in d["quantities"]["fpp_T1_sample_losses"]
    lstm = next(c for c in HEADER["cases"] if c["name"] == "lstm")["definitions"]
    assert "H" in lstm["symbols"] and "second half" in lstm["obs"]["formula"] and "c_out" in lstm["readout"]["formula"]
    ib = next(c for c in HEADER["cases"] if c["name"] == "influence_balancing")["definitions"]
    assert "0 elsewhere" in ib["step"]["formula"] and "n_plus" in ib["symbols"]
