"""The golden header's definitions: every symbol, the exact formula of every stored array, per case.

Issue 25: the header alone must be enough to rebuild every array of a golden case
in another framework. Each case gets a ``definitions`` entry (written by
:func:`case_definitions`) with

* ``symbols``: every letter the formulas use, with its value for the case
  (``T``, ``n``, ``d``, ``p``, ``H`` for the LSTM, ``B``, ``obs``, ...);
* ``functions``: the scalar functions used (sigmoid, relu, log_softmax), as
  formulas of ``a``;
* ``step``, ``obs``, ``readout``, ``loss``: each as a ``formula`` (mathematics)
  and as ``numpy`` statements over the documented names (parameters named like the
  layout with ``.`` replaced by ``_``: ``cell_W``, ``readout_c``, ...); the batch
  dimensions lead, so a matrix acts as ``s @ W.T``;
* ``quantities``: for every stored array, its exact definition and its shape as
  stored;
* ``fpp``: the FPP settings (λ, trajectory lengths, the offset of S), or why the
  case has no FPP arrays.

The numpy statements are what ``tests/oracles/test_golden_header.py`` executes to
rebuild every array without this toolkit's model code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FUNCTIONS", "TOLERANCE", "case_definitions", "conventions"]

#: the norm behind ``check_rtol`` (stated in the header)
TOLERANCE = (
    "normwise, per array: max_i |a_i - r_i| <= check_rtol * max_i |r_i| (a: the array checked, r: the reference; "
    "both maxima over every entry of the array; where r is all zero: max_i |a_i| <= check_rtol)"
)

#: scalar functions of the formulas, as numpy expressions of ``a`` (elementwise; log_softmax over the last axis)
FUNCTIONS = {
    "sigmoid": "1 / (1 + exp(-a))",
    "relu": "where(real(a) > 0, a, 0 * a)",
    "log_softmax": "a - amax(real(a), axis=-1, keepdims=True) "
    "- log(sum(exp(a - amax(real(a), axis=-1, keepdims=True)), axis=-1, keepdims=True))",
}

_NUMPY_NAMES = (
    "the numpy statements run with: numpy's tanh, exp, log, cos, sum, where, real, amax, eye, array, concatenate; "
    "the functions above; the case's parameters named like the layout with '.' -> '_' (cell_W, readout_V, "
    "readout_c, ...); s = s_{t-1} and x = x_t with the batch dimensions first ((*B, n) and (*B, d)); "
    "the step's statements assign s_new = s_t, obs's expression gives o = obs(s), readout's y, loss's the "
    "scalar l from y and q (the target)"
)


def conventions() -> dict[str, str]:
    """The header's ``conventions``: indexing, storage, and the definitions shared by every case."""
    return {
        "time": "s_t = F(s_{t-1}, x_t) for t = 1..T; inputs[t-1] = x_t; targets[t-1] = q_t, the target of step t",
        "loss": "l_t = loss(readout(obs(s_t)), q_t); L = sum_{t=1..T} l_t; each l_t sums over the batch dimensions",
        "theta": "one flat float64 vector; blocks in 'layout' order, each flattened row-major (C order)",
        "arrays": "float64, little-endian, C order; key '<case>__<quantity>'; shapes exactly as each entry's "
        "'shape' ([] is a 0-d array)",
        "influence": "influence[t-1, *b, i, j] = d (s_t)_i / d theta_j = (J_t)_ij; J_0 = 0 (s_0 is an input, "
        "independent of theta); J_t = dF/ds(s_{t-1}, x_t) J_{t-1} + dF/dtheta(s_{t-1}, x_t) (RTRL; UORO eq. (4))",
        "per_step_gradients": "per_step_gradients[t-1, j] = d l_t / d theta_j, the TOTAL derivative of l_t "
        "through s_1..s_t: (dl_t/ds_t) J_t + (partial l_t/partial theta at fixed s_t, the readout's parameters); "
        "not the immediate partial alone",
        "targets": "class targets are stored as one-hot probabilities q",
        "derivatives": "every d/dtheta is the total derivative of the stated function of theta, all other named "
        "inputs (s_0, x_t, q_t, and anything said to be held fixed) constant",
        "tolerance": TOLERANCE,
        "definitions": "each case's 'definitions' defines every symbol and the exact formula of every stored array; "
        "'equations' are the short forms",
    }


def _linear_readout(ro: dict[str, Any]) -> dict[str, Any]:
    k, m = ro["out_features"], ro["in_features"]
    return {
        "formula": f"y = V obs(s) + c_out; V = readout.V ({k}x{m}), c_out = readout.c ({k},)",
        "numpy": "y = o @ readout_V.T + readout_c",
    }


def _select_readout(ro: dict[str, Any]) -> dict[str, Any]:
    idx = list(ro["indices"])
    formula = f"y = obs(s)[{idx}] (state entries {idx}, 0-based; no parameters)"
    return {"formula": formula, "numpy": f"y = o[..., {idx}]"}


def _loss(loss: str) -> dict[str, Any]:
    if loss == "cross-entropy":
        return {
            "formula": "l(y, q) = -sum_b sum_j q_bj log_softmax(y_b)_j (q: target probabilities, one-hot)",
            "numpy": "l = -sum(q * log_softmax(y))",
        }
    return {"formula": "l(y, q) = 0.5 sum_b sum_j (y_bj - q_bj)^2", "numpy": "l = 0.5 * sum((y - q) ** 2)"}


_CellDefs = tuple[dict[str, str], dict[str, Any], dict[str, Any]]
_OBS_ALL = {"formula": "obs(s) = s (the whole state)", "numpy": "o = s"}


def _elman(c: dict[str, Any]) -> _CellDefs:
    kind = c["kind"]
    phi = {"elman-tanh": "tanh", "elman-relu": "relu", "linear": ""}[kind]
    n, d = c["n"], c["d"]
    lhs = "W s_{t-1} + U x_t + b"
    wrap = f"{phi}({lhs})" if phi else lhs
    npy = "s @ cell_W.T + x @ cell_U.T + cell_b"
    step = {
        "formula": f"s_t = {wrap}; W = cell.W ({n}x{n}), U = cell.U ({n}x{d}), b = cell.b ({n},)",
        "numpy": [f"s_new = {phi}({npy})" if phi else f"s_new = {npy}"],
    }
    return {}, step, _OBS_ALL


def _lstm(c: dict[str, Any]) -> _CellDefs:
    H, d = c["n"], c["d"]
    step = {
        "formula": (
            f"s = (c, h): c = s[0:{H}] (cell memory), h = s[{H}:{2 * H}] (output), H = {H}; "
            "a = W h_{t-1} + U x_t + b; a = (a_f, a_i, a_o, a_z), each of length H, in that order; "
            "f = sigmoid(a_f), i = sigmoid(a_i), o = sigmoid(a_o), z = tanh(a_z); "
            "c_t = i*z + f*c_{t-1}; h_t = o*tanh(c_t); s_t = (c_t, h_t) "
            f"(* elementwise; W = cell.W ({4 * H}x{H}), U = cell.U ({4 * H}x{d}), b = cell.b ({4 * H},))"
        ),
        "numpy": [
            f"c, h = s[..., :{H}], s[..., {H}:]",
            "a = h @ cell_W.T + x @ cell_U.T + cell_b",
            f"f, i, o, z = (sigmoid(a[..., :{H}]), sigmoid(a[..., {H}:{2 * H}]), "
            f"sigmoid(a[..., {2 * H}:{3 * H}]), tanh(a[..., {3 * H}:]))",
            "c_new = i * z + f * c",
            "s_new = concatenate([c_new, o * tanh(c_new)], axis=-1)",
        ],
    }
    obs = {"formula": f"obs(s) = h = s[{H}:{2 * H}] (the second half of the state)", "numpy": f"o = s[..., {H}:]"}
    width = f"the LSTM's hidden width, {H} (the cell spec's 'n'); the state size is n = 2H = {2 * H}"
    return {"H": width}, step, obs


def _gru(c: dict[str, Any]) -> _CellDefs:
    n, d = c["n"], c["d"]
    step = {
        "formula": (
            "h = s_{t-1}; W = (W_r; W_z; W_n), U = (U_r; U_z; U_n), b = (b_r; b_z; b_n): row blocks of "
            f"{n} rows in that order; r = sigmoid(W_r h + U_r x_t + b_r); z = sigmoid(W_z h + U_z x_t + b_z); "
            "g = tanh(U_n x_t + r*(W_n h) + b_n); s_t = (1 - z)*g + z*h "
            f"(* elementwise; W = cell.W ({3 * n}x{n}), U = cell.U ({3 * n}x{d}), b = cell.b ({3 * n},))"
        ),
        "numpy": [
            "a = x @ cell_U.T + cell_b",
            "w = s @ cell_W.T",
            f"r = sigmoid(w[..., :{n}] + a[..., :{n}])",
            f"z = sigmoid(w[..., {n}:{2 * n}] + a[..., {n}:{2 * n}])",
            f"g = tanh(a[..., {2 * n}:] + r * w[..., {2 * n}:])",
            "s_new = (1 - z) * g + z * s",
        ],
    }
    return {}, step, _OBS_ALL


def _influence_balancing(c: dict[str, Any]) -> _CellDefs:
    n, plus = c["n"], c["p"]
    signs = [1.0] * plus + [-1.0] * (n - plus)
    step = {
        "formula": (
            f"s_t = A s_{{t-1}} + theta c; A ({n}x{n}): A_ii = A_i,i+1 = 1/2, 0 elsewhere; "
            f"c = ({', '.join(f'{v:+g}' for v in signs)}): {plus} entries +1 then {n - plus} entries -1; "
            "theta = cell.theta, the only parameter; the cell has no input (d = 0)"
        ),
        "numpy": [
            f"A = 0.5 * (eye({n}) + eye({n}, k=1))",
            f"c = array({signs})",
            "s_new = s @ A.T + cell_theta[0] * c",
        ],
    }
    sym = {"n_plus": f"the number of +1 entries of c, {plus} (the cell spec's 'p'; NOT the parameter count p = 1)"}
    return sym, step, _OBS_ALL


def _cell(c: dict[str, Any]) -> _CellDefs:
    """(extra symbols, step, obs) of a cell spec."""
    kinds = {
        **dict.fromkeys(("elman-tanh", "elman-relu", "linear"), _elman),
        **dict.fromkeys(("lstm",), _lstm),
        **dict.fromkeys(("gru",), _gru),
        **dict.fromkeys(("influence-balancing",), _influence_balancing),
    }
    if c["kind"] not in kinds:  # pragma: no cover - golden_cases exports these only
        raise ValueError(f"no definitions for cell kind {c['kind']!r}")
    return kinds[c["kind"]](c)


def _quantities(T: int, batch: list[int], fpp: bool, ks: list[int], fpp_ts: tuple[int, ...]) -> dict[str, str]:
    B = "".join(f", {b}" for b in batch)
    q = {
        "states": f"s_0 = s0; s_t = F(s_{{t-1}}, x_t), t = 1..T; states[t] = s_t; shape (T+1{B}, n)",
        "losses": "losses[t-1] = l_t = loss(readout(obs(s_t)), q_t), t = 1..T (summed over the batch); shape (T,)",
        "total_loss": "L = sum_{t=1..T} l_t; shape [] (a 0-d array)",
        "gradient": "dL/dtheta (total derivative; what BPTT computes); shape (p,)",
        "per_step_gradients": "per_step_gradients[t-1] = d l_t/d theta, the total derivative through s_1..s_t = "
        "(d l_t/d s_t) J_t + partial l_t/partial theta|_{s_t fixed}; rows sum to 'gradient'; shape (T, p)",
        "influence": f"influence[t-1] = J_t = d s_t/d theta, J_0 = 0, J_t = dF/ds(s_{{t-1}}, x_t) J_{{t-1}} + "
        f"dF/dtheta(s_{{t-1}}, x_t); shape (T{B}, n, p) (each batch element its own J)",
    }
    for k in ks:
        q[f"truncated_model_states_k{k}"] = (
            f"h_t^k, t = 1..T, k = {k} (Miller & Hardt eq. (3)): start at h = 0 (zeros) at step t-k, or at h = s0 "
            "at step 0 where t-k <= 0; apply F for steps max(t-k, 0)+1 .. t; "
            f"truncated_model_states_k{k}[t-1] = h_t^k; shape (T{B}, n)"
        )
        q[f"truncated_model_gradient_final_k{k}"] = (
            f"d/dtheta of l(readout(obs(h_T^k)), q_T), k = {k} (Miller & Hardt Lemma 2's p_T^k); shape (p,)"
        )
        q[f"truncated_model_gradient_total_k{k}"] = (
            f"d/dtheta of sum_{{t=1..T}} l(readout(obs(h_t^k)), q_t), k = {k}; shape (p,)"
        )
        q[f"tbptt_gradient_total_k{k}"] = (
            f"sum_{{t=1..T}} d/dtheta l(readout(obs(u_t)), q_t), k = {k}, where u_t = F applied for steps "
            "max(t-k, 0)+1 .. t starting from states[max(t-k, 0)] (the exact s_{t-k}, held fixed: no derivative "
            "through it); shape (p,)"
        )
    if fpp:
        q["fpp_states"] = "S[i, j] = states[i, j] + 0.05 cos(i + j), i = 0..T, j = 0..n-1 (0-based); shape (T+1, n)"
        for m in fpp_ts:
            rng = f"i = {m}..T ({T - m + 1} samples)"
            q[f"fpp_T{m}_sample_losses"] = (
                f"FPP with trajectory length m = {m} (the 'T' of the array name and of FPP eq. (6)), lambda = 1: "
                f"for {rng}: u = S[i-m]; apply F for steps i-m+1 .. i (u <- F(u, x_step)); s_hat_i = u; "
                "L_i = l(readout(obs(s_hat_i)), q_i) + (lambda/2) sum_j (S[i, j] - s_hat_i[j])^2 "
                "(lambda/2, not lambda; one L_i per sample i, NOT summed over the window nor averaged over i as in "
                "the objective (1/(T-m+1)) sum_i L_i); "
                f"fpp_T{m}_sample_losses[i-{m}] = L_i; shape (T-m+1,)"
            )
            q[f"fpp_T{m}_sample_theta_gradients"] = (
                f"[i-{m}] = d L_i/d theta with S held fixed, {rng} (FPP eq. (7)'s W and beta parts: cell.* and "
                "readout.*); shape (T-m+1, p)"
            )
            q[f"fpp_T{m}_sample_state_gradients"] = (
                f"[i-{m}, r, j] = d L_i/d S[r, j] with theta fixed, {rng}, dense over every row r = 0..T of S "
                "(non-zero only in rows i-m and i; FPP eq. (7)); shape (T-m+1, T+1, n)"
            )
    return q


def case_definitions(
    spec: dict[str, Any], sizes: dict[str, Any], ks: list[int], fpp: bool, fpp_ts: tuple[int, ...], fpp_lam: float
) -> dict[str, Any]:
    """The ``definitions`` entry of one case (``spec``: its ``problem``; ``sizes``: T, n, p, batch)."""
    extra, step, obs = _cell(spec["cell"])
    ro = spec["readout"]
    readout = _linear_readout(ro) if ro["kind"] == "linear" else _select_readout(ro)
    batch = list(sizes["batch"])
    d = spec["cell"].get("d", 0)
    symbols = {
        "T": f"the sequence length, {sizes['T']}",
        "n": f"the state size len(s_t), {sizes['n']}",
        "d": f"the input size len(x_t), {d}",
        "p": f"the number of parameters len(theta), {sizes['p']}",
        "B": f"the batch shape, {batch} (leading dimensions of s0, inputs, targets; each element independent)"
        if batch
        else "no batch dimensions ([])",
        "x_t": "inputs[t-1]",
        "q_t": "targets[t-1] (regression targets, or one-hot class probabilities)",
        "F": "the cell's transition: s_t = F(s_{t-1}, x_t), see 'step'",
        "obs": obs["formula"],
        "J_t": "the influence d s_t/d theta (n x p per batch element); J_0 = 0",
        **extra,
    }
    out: dict[str, Any] = {
        "symbols": symbols,
        "functions": dict(FUNCTIONS),
        "numpy_names": _NUMPY_NAMES,
        "step": step,
        "obs": obs,
        "readout": readout,
        "loss": _loss(spec["loss"]),
        "quantities": _quantities(int(sizes["T"]), batch, fpp, ks, fpp_ts),
    }
    if fpp:
        out["fpp"] = {
            "lambda": fpp_lam,
            "trajectory_lengths": list(fpp_ts),
            "states_offset": "0.05 * cos(i + j)",  # a numpy expression of the row i and the column j of S
        }
    else:
        out["fpp"] = (
            "no FPP arrays: FPP's buffer is one sequence with one explicit state per time step (S has T+1 rows), "
            "so the golden FPP quantities are defined for unbatched cases only and this case is batched"
        )
    return out
