r"""Plain numpy against the golden vectors: an Elman RNN written from ``golden.json`` alone.

What a user of another framework does (issue 25): read the header's definitions of the
Elman-tanh, Elman-relu and linear cases, implement them, write the arrays computed into
a results ``.npz`` named like the golden ones, and check it::

    python -m verify.examples.golden_numpy reports/golden/golden.json mine.npz
    rnn-verify golden --check mine.npz --reference reports/golden/golden.npz

Computed here, for :math:`s_t = \phi(a_t)`, :math:`a_t = W s_{t-1} + U x_t + b` (φ = tanh,
relu, or the identity), :math:`y_t = V s_t + c_\text{out}`:

* ``states``, ``losses``, ``total_loss`` (the forward pass);
* ``gradient`` by BPTT (a reverse pass);
* ``influence`` by RTRL: :math:`J_0 = 0`,
  :math:`J_t = \partial F/\partial s\, J_{t-1} + \partial F/\partial\theta` with
  :math:`\partial F/\partial s = \mathrm{diag}(\phi'(a_t))\, W` (:func:`dF_ds`);
* ``per_step_gradients`` from the influence: :math:`d\ell_t/d\theta = (\partial\ell_t/\partial s_t) J_t
  + \partial\ell_t/\partial\theta|_{s_t}` -- the last term is the readout's own gradient
  (:func:`immediate_gradient`).

Only numpy and json are used: nothing of rnn-verify.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

CELLS = ("elman-tanh", "elman-relu", "linear")


def phi(kind: str, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The activation and its derivative at ``a``."""
    if kind == "elman-tanh":
        h = np.tanh(a)
        return h, 1 - h**2
    if kind == "elman-relu":
        return np.maximum(a, 0), (a > 0).astype(float)
    return a, np.ones_like(a)


def dF_ds(W: np.ndarray, dphi: np.ndarray) -> np.ndarray:
    """∂s_t/∂s_{t-1} = diag(φ'(a_t)) W."""
    return dphi[:, None] * W


def dF_dtheta(s_prev: np.ndarray, x: np.ndarray, dphi: np.ndarray, p: int) -> np.ndarray:
    """∂s_t/∂θ at fixed s_{t-1}: blocks W (n×n), U (n×d), b (n), row-major; zero for the readout's columns."""
    n, d = s_prev.size, x.size
    out = np.zeros((n, p))
    for i in range(n):
        out[i, i * n : (i + 1) * n] = s_prev  # ∂a_i/∂W_ij = s_j
        out[i, n * n + i * d : n * n + (i + 1) * d] = x  # ∂a_i/∂U_ij = x_j
        out[i, n * n + n * d + i] = 1.0  # ∂a_i/∂b_i
    return dphi[:, None] * out


def dl_dy(loss: str, y: np.ndarray, q: np.ndarray) -> np.ndarray:
    """∂ℓ/∂y: y - q (squared error) or softmax(y) - q (cross-entropy with target probabilities q)."""
    if loss == "squared-error":
        return y - q
    e = np.exp(y - y.max())
    return e / e.sum() * q.sum() - q


def loss_value(loss: str, y: np.ndarray, q: np.ndarray) -> float:
    if loss == "squared-error":
        return float(0.5 * np.sum((y - q) ** 2))
    m = y.max()
    return float(-np.sum(q * (y - m - np.log(np.sum(np.exp(y - m))))))


def immediate_gradient(s: np.ndarray, e: np.ndarray, p: int) -> np.ndarray:
    """∂ℓ_t/∂θ at fixed s_t: the readout's blocks V (e sᵀ) and c_out (e), the last of θ; zero elsewhere."""
    g = np.zeros(p)
    k, n = e.size, s.size
    g[p - k - k * n : p - k] = np.outer(e, s).ravel()
    g[p - k :] = e
    return g


def compute(case: dict[str, Any], a: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every array this implementation computes for one case (unbatched Elman/linear cells)."""
    kind, loss = case["problem"]["cell"]["kind"], case["problem"]["loss"]
    blocks = {e["name"]: a["theta"][e["offset"] : e["offset"] + e["size"]].reshape(e["shape"]) for e in case["layout"]}
    W, U, b, V, c = (blocks[k] for k in ("cell.W", "cell.U", "cell.b", "readout.V", "readout.c"))
    xs, qs, p = a["inputs"], a["targets"], a["theta"].size
    T, n = xs.shape[0], W.shape[0]
    s, J = [a["s0"]], np.zeros((n, p))  # J_0 = 0
    dphis, influence, per_step, losses = [], [], [], []
    for t in range(1, T + 1):
        h, dphi = phi(kind, W @ s[-1] + U @ xs[t - 1] + b)
        J = dF_ds(W, dphi) @ J + dF_dtheta(s[-1], xs[t - 1], dphi, p)
        s.append(h)
        dphis.append(dphi)
        influence.append(J)
        y = V @ h + c
        e = dl_dy(loss, y, qs[t - 1])
        losses.append(loss_value(loss, y, qs[t - 1]))
        per_step.append((V.T @ e) @ J + immediate_gradient(h, e, p))  # total derivative dl_t/dtheta
    grad, adj = np.zeros(p), np.zeros(n)  # BPTT: adj = dL/ds_t, accumulated backwards
    for t in range(T, 0, -1):
        y = V @ s[t] + c
        e = dl_dy(loss, y, qs[t - 1])
        grad += immediate_gradient(s[t], e, p)
        adj = adj + V.T @ e
        grad += adj @ dF_dtheta(s[t - 1], xs[t - 1], dphis[t - 1], p)
        adj = adj @ dF_ds(W, dphis[t - 1])
    return {
        "states": np.array(s),
        "losses": np.array(losses),
        "total_loss": np.array(sum(losses)),
        "gradient": grad,
        "per_step_gradients": np.array(per_step),
        "influence": np.array(influence),
    }


def _is_results_file(path: Path) -> bool:
    """An existing .npz of arrays named <case>__<quantity> only (what :func:`main` writes)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return bool(z.files) and all("__" in k and k != "__header__" for k in z.files)
    except Exception:  # not an npz at all
        return False


def main(argv: list[str] | None = None) -> int:
    """``golden_numpy.py GOLDEN.json OUT.npz``: compute the Elman/linear cases, write OUT.npz."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m verify.examples.golden_numpy GOLDEN.json OUT.npz", file=sys.stderr)
        return 2
    header_path, out = Path(args[0]), Path(args[1])
    if header_path.suffix != ".json" or not header_path.is_file() or not header_path.with_suffix(".npz").is_file():
        print(f"GOLDEN.json={header_path}: must be a golden header with its .npz beside it", file=sys.stderr)
        return 2
    if out.suffix != ".npz" or (out.exists() and not _is_results_file(out)):
        print(f"OUT={out}: must be a new .npz or a results file this script wrote (not overwritten)", file=sys.stderr)
        return 2
    header = json.loads(header_path.read_text())
    results = {}
    with np.load(header_path.with_suffix(".npz")) as z:
        for case in header["cases"]:
            if case["problem"]["cell"]["kind"] in CELLS and not case["sizes"]["batch"]:
                a = {q: z[f"{case['name']}__{q}"] for q in ("theta", "inputs", "targets", "s0")}
                for q, value in compute(case, a).items():
                    results[f"{case['name']}__{q}"] = value
    np.savez(out, **results)  # type: ignore[arg-type]
    print(f"wrote {len(results)} arrays to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
