r"""Portable golden vectors: small problems with their exact float64 reference quantities.

A golden file lets an implementation in any language or framework be tested
against this toolkit's references without running Python: it holds problems of
every cell kind (θ, inputs, targets, :math:`s_0`) and the exact float64 quantities
computed by :mod:`verify.oracles.bptt`.

Format
------
``golden.npz`` (plain, uncompressed NumPy ``.npz`` = a zip of ``.npy`` files;
readable with ``numpy.load``, ``NPZ.jl``, ``cnpy``, ...), every array float64
little-endian in C (row-major) order, named ``<case>__<quantity>``; plus a JSON
header, stored both inside the ``.npz`` (array ``__header__``: UTF-8 bytes as
uint8) and next to it as ``golden.json``. The header states, per case, the
cell's equations (:meth:`verify.model.cells.Cell.equations`), the readout, the loss,
the sizes, the parameter layout (name, shape, offset in θ; blocks are flattened
row-major), and for each array its shape, meaning and SHA-256.

Conventions (the problem model of :mod:`verify.model.problem`)
--------------------------------------------------------
.. math::
    s_t = f_\theta(s_{t-1}, x_t),\quad y_t = g_\theta(\mathrm{obs}(s_t)),\quad
    \ell_t = \ell(y_t, \hat y_t),\quad L = \sum_{t=1}^T \ell_t,

``inputs[t-1]`` = :math:`x_t`, ``targets[t-1]`` = :math:`\hat y_t` (class targets
as one-hot probabilities), losses summed over batch dimensions.

Quantities (provider ``reference``)
-----------------------------------
``states`` (T+1, *B, n): :math:`s_0..s_T`; ``losses`` (T,): :math:`\ell_t`;
``total_loss`` () (a 0-d array): L; ``gradient`` (p,): :math:`\nabla_\theta L` (BPTT);
``per_step_gradients`` (T, p): :math:`d\ell_t/d\theta`, the total derivative through
:math:`s_1..s_t` (not the immediate partial);
``influence`` (T, *B, n, p): :math:`\partial s_t/\partial\theta` (UORO eq. (4));
``truncated_model_states_k{k}`` (T, *B, n): :math:`h_t^k` of Miller & Hardt eq. (3);
``truncated_model_gradient_final_k{k}`` (p,): :math:`\nabla p_T^k` (Lemma 2's
quantity); ``truncated_model_gradient_total_k{k}`` (p,):
:math:`\nabla\sum_t \ell_t(h_t^k)`; ``tbptt_gradient_total_k{k}`` (p,): truncated
BPTT on the exact trajectory, :math:`\sum_t \partial\ell_t/\partial\theta|_{s_{t-k}}`.

Quantities (provider ``fpp``; unbatched cases)
----------------------------------------------
Fixed Point Propagation (fpp-explicit-state-variables.md eq. (6)-(7)) on the case's
sequence as the buffer, penalty λ = 1, trajectory lengths T ∈ {1, 2}:
``fpp_states`` (n+1, k): the explicit states S (rollout + 0.05·cos(i + j), so that
:math:`s_i \ne \hat s_i`); ``fpp_T{T}_sample_losses`` (n−T+1,): :math:`L_i`;
``fpp_T{T}_sample_theta_gradients`` (n−T+1, p): :math:`\nabla_\theta L_i`;
``fpp_T{T}_sample_state_gradients`` (n−T+1, n+1, k): :math:`\nabla_S L_i` (dense),
for i = T..n -- by autograd of the definition of :math:`L_i`, the reference that
eq. (7)'s explicit gradients must equal.

Extension point
---------------
A module listed in :data:`PROVIDER_MODULES` that defines ``golden_quantities(problem,
theta, ks) -> dict[str, tuple[torch.Tensor, str]]`` (name -> (value, meaning))
adds its quantities to every case (it may return ``{}`` for cells it does not
apply to); :func:`check_golden` recomputes them the same way. Providers are
recorded per quantity in the header, so a file written with a provider that is
not installed fails its check by name instead of being skipped.

:func:`check_golden` takes either file of the pair and reads both: each is
validated field by field (:mod:`verify.schema`; a missing, corrupt or mismatched
file is an error naming the file and the field, exit 2 in the CLI), and the
sidecar ``.json`` must equal the header inside the ``.npz``. It then verifies the
arrays twice: **integrity** (each array's SHA-256 equals the header's) and
**recomputation** (each quantity recomputed from the stored θ, inputs, targets and
:math:`s_0` agrees within ``check_rtol`` relative to its largest entry). A
tampered array fails naming ``<case>__<quantity>`` (exit 1). A file holding an array
its header does not list, or lacking one it lists, is refused naming them all (exit 2).

Definitions (issue 25)
----------------------
Every case's header entry carries ``definitions`` (:mod:`verify.oracles.golden_defs`):
every symbol, the exact formula and stored shape of every array, the step, obs,
readout and loss as numpy statements, and the FPP settings (or why a case has none);
the header's ``check_norm`` states the norm of ``check_rtol``. A user's own arrays
(any subset, no hashes) are checked by :mod:`verify.oracles.golden_user`.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from verify._validate import SEED_MULTIPLIER, require_memory, validate_seed
from verify.errors import InvalidArgument, InvalidFile
from verify.files import preflight_file, write_file_atomic
from verify.model.builders import influence_balancing_problem, make_cell, random_problem
from verify.model.cells import InfluenceBalancingCell
from verify.model.losses import LinearReadout, SelectReadout, SoftmaxCrossEntropy, SquaredError
from verify.model.problem import Problem
from verify.oracles.bptt import (
    bptt_gradient,
    influence_matrices,
    per_step_gradients,
    tbptt_gradient,
    truncated_model_gradient,
    truncated_model_states,
)
from verify.oracles.golden_defs import TOLERANCE, case_definitions, conventions
from verify.schema import (
    MAX_K,
    MAX_KS,
    GoldenCase,
    GoldenHeader,
    first_difference,
    load_json_file,
    load_npz,
    parse_golden_header,
    parse_json_bytes,
)

__all__ = [
    "DEFAULT_KS",
    "FORMAT",
    "FORMAT_VERSION",
    "PROVIDER_MODULES",
    "GoldenCheck",
    "build_problem",
    "check_golden",
    "compute_quantities",
    "export_golden",
    "golden_cases",
    "golden_pair",
    "load_golden",
    "normwise_error",
]

FORMAT = "rnn-verify.golden"
FORMAT_VERSION = 1
DEFAULT_KS = (1, 2, 3)
CHECK_RTOL = 1e-9
HEADER_KEY = "__header__"
SEP = "__"
INPUT_ARRAYS = ("theta", "inputs", "targets", "s0")
#: modules that may add quantities through ``golden_quantities(problem, theta, ks)``
PROVIDER_MODULES: tuple[str, ...] = ("verify.fpp.golden",)

_REFERENCE_MEANINGS = {
    "states": "s_0..s_T, shape (T+1, *B, n)",
    "losses": "per-step losses l_1..l_T, shape (T,)",
    "total_loss": "L = sum_t l_t, shape () (a 0-d array)",
    "gradient": "dL/dtheta by BPTT, shape (p,)",
    "per_step_gradients": "dl_t/dtheta, the total derivative through s_1..s_t (not the immediate partial), "
    "shape (T, p)",
    "influence": "ds_t/dtheta (UORO eq. (4)), shape (T, *B, n, p)",
}


# ------------------------------------------------------------------ problems
def _spec_of(problem: Problem, kind: str) -> dict[str, Any]:
    cell, ro = problem.cell, problem.readout
    if isinstance(cell, InfluenceBalancingCell):
        cell_spec: dict[str, Any] = {"kind": "influence-balancing", "n": cell.n, "p": cell.p}
    else:
        n = cell.state_size // 2 if kind == "lstm" else cell.state_size
        cell_spec = {"kind": kind, "n": n, "d": cell.input_size}
    if isinstance(ro, LinearReadout):
        ro_spec: dict[str, Any] = {"kind": "linear", "in_features": ro.in_features, "out_features": ro.out_features}
    elif isinstance(ro, SelectReadout):
        ro_spec = {"kind": "select", "indices": list(ro.indices)}
    else:  # pragma: no cover - only these readouts exist
        raise InvalidArgument("readout", type(ro).__name__, "not exportable")
    loss = "cross-entropy" if isinstance(problem.loss, SoftmaxCrossEntropy) else "squared-error"
    return {"cell": cell_spec, "readout": ro_spec, "loss": loss, "batch": list(problem.batch_shape), "T": problem.T}


def golden_cases(seed: int = 0) -> list[tuple[str, Problem, torch.Tensor, dict[str, Any]]]:
    """The exported problems: every cell kind, both losses, one batched case, influence balancing."""
    validate_seed("seed", seed)
    gen = torch.Generator().manual_seed(seed * SEED_MULTIPLIER + 7)
    plan = (
        ("elman_tanh", "elman-tanh", "squared-error", ()),
        ("elman_relu", "elman-relu", "cross-entropy", ()),
        ("linear", "linear", "squared-error", ()),
        ("lstm", "lstm", "cross-entropy", ()),
        ("gru", "gru", "squared-error", ()),
        ("gru_batch2", "gru", "cross-entropy", (2,)),
    )
    out = []
    for name, kind, loss, batch in plan:
        P, th = random_problem(kind, n=3, d=2, T=6, k=2, loss=loss, batch=batch, generator=gen)
        out.append((name, P, th, _spec_of(P, kind)))
    P, th = influence_balancing_problem(n=5, p=3, T=6, theta=0.5)
    out.append(("influence_balancing", P, th, _spec_of(P, "influence-balancing")))
    return out


def build_problem(spec: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> tuple[Problem, torch.Tensor]:
    """Rebuild a problem and θ from a case's header entry and its stored input arrays."""
    try:
        c = spec["cell"]
        if c["kind"] == "influence-balancing":
            cell: Any = InfluenceBalancingCell(int(c["n"]), int(c["p"]))
        else:
            cell = make_cell(str(c["kind"]), int(c["n"]), int(c["d"]))
        r = spec["readout"]
        if r["kind"] == "linear":
            readout: Any = LinearReadout(int(r["in_features"]), int(r["out_features"]))
        elif r["kind"] == "select":
            readout = SelectReadout(tuple(int(i) for i in r["indices"]))
        else:
            raise InvalidArgument("readout.kind", r["kind"], "must be 'linear' or 'select'")
        loss: Any = SoftmaxCrossEntropy() if spec["loss"] == "cross-entropy" else SquaredError()
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument("golden header", dict(spec), f"cannot rebuild the problem: {exc!r}") from None
    t = {k: torch.from_numpy(np.ascontiguousarray(arrays[k], dtype=np.float64)) for k in INPUT_ARRAYS}
    problem = Problem(cell, readout, loss, t["inputs"], t["targets"], t["s0"])
    return problem, problem.check_theta(t["theta"])


# ---------------------------------------------------------------- quantities
def _reference_quantities(
    problem: Problem, theta: torch.Tensor, ks: Sequence[int]
) -> dict[str, tuple[torch.Tensor, str]]:
    with torch.no_grad():
        states = problem.rollout(theta)
        losses = problem.losses(theta)
    out: dict[str, tuple[torch.Tensor, str]] = {
        "states": (states, _REFERENCE_MEANINGS["states"]),
        "losses": (losses, _REFERENCE_MEANINGS["losses"]),
        "total_loss": (losses.sum(), _REFERENCE_MEANINGS["total_loss"]),
        "gradient": (bptt_gradient(problem, theta), _REFERENCE_MEANINGS["gradient"]),
        "per_step_gradients": (per_step_gradients(problem, theta), _REFERENCE_MEANINGS["per_step_gradients"]),
        "influence": (influence_matrices(problem, theta), _REFERENCE_MEANINGS["influence"]),
    }
    for k in ks:
        with torch.no_grad():
            hk = truncated_model_states(problem, theta, k)
        out[f"truncated_model_states_k{k}"] = (
            hk,
            f"h_t^k of the truncated model (Miller & Hardt eq. (3)), restarted from 0 k={k} steps back "
            "(from s_0 where t <= k), shape (T, *B, n)",
        )
        out[f"truncated_model_gradient_final_k{k}"] = (
            truncated_model_gradient(problem, theta, k, which="final"),
            f"grad of p_T^k = l_T(h_T^k), k={k} (Miller & Hardt Lemma 2), shape (p,)",
        )
        out[f"truncated_model_gradient_total_k{k}"] = (
            truncated_model_gradient(problem, theta, k, which="total"),
            f"grad of sum_t l_t(h_t^k), k={k}, shape (p,)",
        )
        out[f"tbptt_gradient_total_k{k}"] = (
            tbptt_gradient(problem, theta, k, which="total"),
            f"truncated BPTT: sum_t dl_t/dtheta with s_(t-k) of the exact trajectory held fixed, k={k}, shape (p,)",
        )
    return out


#: FPP settings of the golden quantities: trajectory lengths and penalty λ
FPP_TS = (1, 2)
FPP_LAM = 1.0


def fpp_states(problem: Problem, theta: torch.Tensor) -> torch.Tensor:
    """Explicit FPP states S (n+1, k): the rollout s_0..s_n plus the offset 0.05·cos(i + j) at (i, j).

    The offset makes s_i ≠ ŝ_i, so the penalty part of the gradient is exercised.
    """
    with torch.no_grad():
        states = problem.rollout(theta)
    i = torch.arange(states.shape[0], dtype=torch.float64)[:, None]
    j = torch.arange(states.shape[-1], dtype=torch.float64)[None, :]
    return states + 0.05 * torch.cos(i + j)


def _fpp_quantities(problem: Problem, theta: torch.Tensor, ks: Sequence[int]) -> dict[str, tuple[torch.Tensor, str]]:
    r"""FPP per-sample gradients (fpp-explicit-state-variables.md eq. (6), (7)) by autograd of L_i.

    .. math::
        L_i(\beta, W, S) = \ell_\beta(\hat s_i; y_i) + \frac{\lambda}{2}\|s_i - \hat s_i\|^2,\quad
        \hat s_i = f_W(\dots f_W(s_{i-T}, o_{i-T+1}) \dots, o_i),\quad i \in \{T..n\},

    the buffer being the problem's sequence (n = T_seq transitions, o_i = inputs[i-1],
    y_i = targets[i-1]) and S from :func:`fpp_states`. Unbatched problems only.
    """
    if problem.batch_shape:
        return {}
    S0 = fpp_states(problem, theta)
    out: dict[str, tuple[torch.Tensor, str]] = {
        "fpp_states": (S0, "explicit FPP states S = s_0..s_n (rollout) + 0.05*cos(i + j), shape (n+1, k)")
    }
    n = problem.T
    for T in FPP_TS:
        if T > n:
            continue
        g_th, g_S, L = [], [], []
        for i in range(T, n + 1):
            th = theta.detach().clone().requires_grad_(True)
            S = S0.clone().requires_grad_(True)
            with torch.enable_grad():
                s = S[i - T]
                for tau in range(i - T + 1, i + 1):
                    s = problem.transition(th, s, problem.inputs[tau - 1])
                resid = S[i] - s
                Li = problem.step_loss(th, s, problem.targets[i - 1]) + 0.5 * FPP_LAM * (resid * resid).sum()  # eq. (6)
                a, b = torch.autograd.grad(Li, (th, S))
            g_th.append(a)
            g_S.append(b)
            L.append(Li.detach())
        where = f"T={T}, lambda={FPP_LAM}, i = {T}..{n}"
        out[f"fpp_T{T}_sample_losses"] = (torch.stack(L), f"L_i of FPP eq. (6), {where}, shape (n-T+1,)")
        out[f"fpp_T{T}_sample_theta_gradients"] = (
            torch.stack(g_th),
            f"dL_i/dtheta (W in cell.*, beta in readout.*; eq. (7)), {where}, shape (n-T+1, p)",
        )
        out[f"fpp_T{T}_sample_state_gradients"] = (
            torch.stack(g_S),
            f"dL_i/dS, dense over S (non-zero only in rows i-T and i; eq. (7)), {where}, shape (n-T+1, n+1, k)",
        )
    return out


Provider = Callable[[Problem, torch.Tensor, Sequence[int]], Mapping[str, tuple[torch.Tensor, str]]]


def _providers() -> dict[str, Provider]:
    provs: dict[str, Provider] = {"reference": _reference_quantities, "fpp": _fpp_quantities}
    for mod_name in PROVIDER_MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        fn = getattr(mod, "golden_quantities", None)
        if callable(fn):
            provs[mod_name] = fn
    return provs


def compute_quantities(
    problem: Problem, theta: torch.Tensor, ks: Sequence[int], only: Sequence[str] | None = None
) -> dict[str, tuple[np.ndarray, str, str]]:
    """name -> (float64 array, meaning, provider) for every provider (or those in ``only``)."""
    out: dict[str, tuple[np.ndarray, str, str]] = {}
    for pname, fn in _providers().items():
        if only is not None and pname not in only:
            continue
        for qname, (value, meaning) in fn(problem, theta, ks).items():
            if qname in out or qname in INPUT_ARRAYS:
                raise InvalidArgument("quantity", qname, f"provider {pname} reuses a quantity name")
            arr = value.detach().to(torch.float64).cpu().numpy()
            out[qname] = (np.array(arr, dtype="<f8", order="C"), meaning, pname)  # keeps 0-d arrays 0-d
    return out


def _sha(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


# -------------------------------------------------------------------- export
def export_golden(path: Path | str, *, seed: int = 0, ks: Sequence[int] = DEFAULT_KS) -> Path:
    """Write ``path`` (.npz) and ``path.with_suffix('.json')`` (the header) atomically.

    ``seed`` must pass :func:`verify._validate.validate_seed`; ``ks`` holds 1 to
    ``MAX_KS`` integers in [1, ``MAX_K``]. The ``.json`` beside ``path`` is replaced
    only if it is a golden header already (a user's file of that name is refused).
    """
    path = _export_target(Path(path), seed, ks)
    arrays: dict[str, np.ndarray] = {}
    cases = []
    for name, problem, theta, spec in golden_cases(seed):
        cases.append(_export_case(name, problem, theta, spec, ks, arrays))
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created_with": {"torch": torch.__version__, "numpy": np.__version__},
        "seed": seed,
        "ks": list(ks),
        "check_rtol": CHECK_RTOL,
        "check_norm": TOLERANCE,
        "conventions": conventions(),
        "cases": cases,
    }
    text = json.dumps(header, indent=2)
    arrays[HEADER_KEY] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    write_file_atomic(path, buf.getvalue())
    write_file_atomic(path.with_suffix(".json"), (text + "\n").encode("utf-8"))
    return path


def _export_target(path: Path, seed: int, ks: Sequence[int]) -> Path:
    """The checked output path: a .npz name, a valid seed and ks, and no foreign .json beside it."""
    if path.suffix != ".npz":
        raise InvalidArgument("--out", str(path), "a golden file name must end in .npz")
    validate_seed("--seed", seed)
    if (
        not ks
        or len(ks) > MAX_KS
        or any(isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K for k in ks)
    ):
        raise InvalidArgument("--k", list(ks), f"give 1 to {MAX_KS} truncation lengths, integers in [1, {MAX_K}]")
    path = preflight_file(path, "--out")
    side = path.with_suffix(".json")
    if side.exists() or side.is_symlink():  # written beside FILE.npz without being named: only over a golden header
        try:
            parse_golden_header(load_json_file(side), str(side), INPUT_ARRAYS)
        except InvalidArgument:
            raise InvalidArgument(
                "--out",
                str(path),
                f"{side.name} beside it exists and is not a golden header; refusing to overwrite it "
                "(choose another file name)",
            ) from None
    return path


def _export_case(
    name: str, problem: Problem, theta: torch.Tensor, spec: Any, ks: Sequence[int], arrays: dict[str, np.ndarray]
) -> dict[str, Any]:
    """One case's inputs and reference quantities into ``arrays``; its header entry (sizes, layout, hashes)."""
    entries: dict[str, Any] = {}
    inputs = {
        "theta": theta,
        "inputs": problem.inputs,
        "targets": problem.targets,
        "s0": problem.s0,
    }
    for key, t in inputs.items():
        a = np.ascontiguousarray(t.detach().cpu().numpy(), dtype="<f8")
        arrays[f"{name}{SEP}{key}"] = a
        entries[key] = {"shape": list(a.shape), "sha256": _sha(a), "meaning": f"problem input '{key}'"}
    for qname, (a, meaning, prov) in compute_quantities(problem, theta, ks).items():
        arrays[f"{name}{SEP}{qname}"] = a
        entries[qname] = {"shape": list(a.shape), "sha256": _sha(a), "meaning": meaning, "provider": prov}
    lay = [{"name": e.name, "shape": list(e.shape), "offset": e.offset, "size": e.size} for e in problem.layout]
    sizes = {"T": problem.T, "n": problem.n, "p": problem.p, "batch": list(problem.batch_shape)}
    fpp = any(e.get("provider") == "fpp" for e in entries.values())
    return {
        "name": name,
        "problem": spec,
        "description": problem.describe(),
        "equations": {
            "cell": problem.cell.equations(),
            "readout": problem.readout.describe(),
            "loss": problem.loss.describe(),
        },
        "sizes": sizes,
        "layout": lay,
        "definitions": case_definitions(spec, sizes, list(ks), fpp, FPP_TS, FPP_LAM),
        "arrays": entries,
    }


# --------------------------------------------------------------------- check
@dataclass
class GoldenCheck:
    """Outcome of :func:`check_golden`: one line per array, failures named ``<case>__<quantity>``."""

    path: str
    lines: list[tuple[str, bool, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(ok for _, ok, _ in self.lines) and bool(self.lines)

    @property
    def failures(self) -> list[str]:
        return [name for name, ok, _ in self.lines if not ok]

    def format(self) -> str:
        bad = [(n, m) for n, ok, m in self.lines if not ok]
        out = [f"golden check of {self.path}: {len(self.lines) - len(bad)} of {len(self.lines)} arrays verify"]
        out += [f"  FAIL {n}: {m}" for n, m in bad]
        out.append("OK" if self.ok else f"FAILED: {', '.join(n for n, _ in bad)}")
        return "\n".join(out)


def golden_pair(path: Path | str) -> tuple[Path, Path]:
    """The (.npz, .json) pair of a golden file named by either of its files."""
    p = Path(path)
    if p.suffix not in (".npz", ".json"):
        raise InvalidArgument("golden file", str(p), "must be the .npz or the .json of a golden pair")
    return p.with_suffix(".npz"), p.with_suffix(".json")


def load_golden(path: Path | str) -> tuple[GoldenHeader, dict[str, np.ndarray]]:
    """Read and validate both files of a golden pair; either may be named. Raises InvalidFile/InvalidArgument.

    Both must exist and parse (:func:`verify.schema.parse_golden_header`,
    :func:`verify.schema.load_npz`), and the sidecar ``.json`` must equal the header
    stored inside the ``.npz``; every case's input arrays must be float64 with the
    shapes its header entry states.
    """
    npz, js = golden_pair(path)
    for f in (npz, js):
        if not f.is_file():
            other = js if f == npz else npz
            raise InvalidArgument(
                "golden file",
                str(f),
                f"no such file; a golden pair is {npz.name} + {js.name} and both are checked"
                f" ({other.name} {'is there' if other.is_file() else 'is missing too'})",
            )
    arrays = load_npz(npz)
    raw = arrays.pop(HEADER_KEY, None)
    if raw is None:
        raise InvalidFile(str(npz), HEADER_KEY, "<missing>", "the golden header array (not an rnn-verify golden file)")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise InvalidFile(str(npz), HEADER_KEY, f"{raw.dtype} array of shape {raw.shape}", "1-D uint8 (UTF-8 JSON)")
    inner_name = f"{npz} ({HEADER_KEY})"
    inner = parse_json_bytes(raw.tobytes(), inner_name)
    header = parse_golden_header(inner, inner_name, INPUT_ARRAYS)
    side = load_json_file(js)
    parse_golden_header(side, str(js), INPUT_ARRAYS)
    diff = first_difference(side, inner)
    if diff is not None:
        raise InvalidFile(
            str(js), diff, "(differs)", f"the same header as inside {npz.name} (the pair does not belong together)"
        )
    listed = {f"{case.name}{SEP}{q}": (i, q) for i, case in enumerate(header.cases) for q in case.arrays}
    missing = [key for key in listed if key not in arrays]
    extra = sorted(key for key in arrays if key not in listed)
    if missing or extra:  # issue 23: every array is checked, so a file holds exactly the arrays its header lists
        what = ([f"missing {len(missing)}: {', '.join(missing)}"] if missing else []) + (
            [f"not in the header {len(extra)}: {', '.join(extra)}"] if extra else []
        )
        key = missing[0] if missing else extra[0]
        raise InvalidFile(
            str(npz),
            key,
            "<missing>" if missing else "(extra array)",
            f"exactly the arrays the header lists ({'; '.join(what)})",
        )
    for i, case in enumerate(header.cases):
        for q, entry in case.arrays.items():
            key = f"{case.name}{SEP}{q}"
            a = arrays[key]
            if a.dtype != np.float64:
                raise InvalidFile(str(npz), key, f"dtype {a.dtype}", "a float64 array")
            if q in INPUT_ARRAYS and tuple(a.shape) != entry.shape:
                raise InvalidFile(
                    str(npz), key, f"shape {tuple(a.shape)}", f"shape {entry.shape} as cases[{i}].arrays.{q}.shape says"
                )
    return header, arrays


def _rebuild(case: GoldenCase, index: int, stored: Mapping[str, np.ndarray], file: str) -> tuple[Problem, torch.Tensor]:
    """The case's problem and θ; refuses sizes whose references would not fit in memory."""
    theta, inputs, s0 = stored["theta"], stored["inputs"], stored["s0"]
    steps = int(inputs.shape[0]) if inputs.ndim else 1
    n = int(s0.shape[-1]) if s0.ndim else 1
    batch = int(np.prod(s0.shape[:-1])) if s0.ndim > 1 else 1
    elements = steps * batch * n * int(theta.size)  # the influence matrices, the largest quantity
    require_memory(f"{file}: cases[{index}]", 8 * 4 * elements, f"golden case {case.name!r}")
    try:
        return build_problem(case.problem, stored)
    except InvalidArgument as exc:
        raise InvalidFile(file, f"cases[{index}]", case.name, f"a problem that can be rebuilt ({exc})") from None
    except (RuntimeError, ValueError, TypeError, IndexError, OverflowError) as exc:
        raise InvalidFile(
            file, f"cases[{index}]", case.name, f"a problem that can be rebuilt ({type(exc).__name__}: {exc})"
        ) from None


def normwise_error(a: np.ndarray, r: np.ndarray) -> float:
    """The header's ``check_norm``: ``max|a - r| / max|r|`` (``max|a - r|`` where ``r`` is 0; 0 for empty arrays)."""
    if not r.size:
        return 0.0
    err = float(np.max(np.abs(a - r)))
    scale = float(np.max(np.abs(r)))
    return err / scale if scale > 0 else err


def check_golden(path: Path | str, rtol: float | None = None) -> GoldenCheck:
    """Re-verify a golden pair (integrity and recomputation); name either its .npz or its .json.

    Both files are read and validated first (:func:`load_golden`): a missing,
    corrupt or mismatched file raises :class:`~verify.errors.InvalidArgument` (the CLI
    exits 2). Then each array is checked against its SHA-256 and each quantity
    recomputed; a difference is a FAIL line naming ``<case>__<quantity>`` (exit 1).
    """
    header, arrays = load_golden(path)
    p, _ = golden_pair(path)
    tol = float(rtol if rtol is not None else header.check_rtol)
    ks = list(header.ks)
    report = GoldenCheck(str(p))
    for index, case in enumerate(header.cases):
        name, entries = case.name, case.arrays
        stored = {q: arrays[f"{name}{SEP}{q}"] for q in entries}
        integrity = {q: _sha(a) == entries[q].sha256 for q, a in stored.items()}
        problem, theta = _rebuild(case, index, stored, str(p))
        providers = {str(e.provider) for q, e in entries.items() if q not in INPUT_ARRAYS}
        available = _providers()
        try:
            fresh = compute_quantities(problem, theta, ks, only=[pv for pv in providers if pv in available])
        except (RuntimeError, ValueError, TypeError, IndexError, OverflowError) as exc:
            raise InvalidFile(
                str(p),
                f"cases[{index}]",
                name,
                f"a case whose quantities can be recomputed ({type(exc).__name__}: {exc})",
            ) from None
        for q in entries:
            key = f"{name}{SEP}{q}"
            msgs = []
            if not integrity[q]:
                msgs.append("SHA-256 differs from the header's (array edited?)")
            if q in INPUT_ARRAYS:
                report.lines.append((key, not msgs, "; ".join(msgs) or "input intact"))
                continue
            prov = str(entries[q].provider)
            if q not in fresh:
                why = f"provider {prov!r} is not available here" if prov not in available else "no longer computed"
                report.lines.append((key, False, f"cannot recompute: {why}"))
                continue
            a, b = stored[q], fresh[q][0]
            if tuple(a.shape) != entries[q].shape:
                msgs.append(f"shape {a.shape} differs from the header's {entries[q].shape}")
            if a.shape != b.shape:
                msgs.append(f"shape {a.shape} != recomputed {b.shape}")
            else:
                rel = normwise_error(a, b)
                if not np.isfinite(rel) or rel > tol:
                    msgs.append(f"recomputed value differs: max rel error {rel:.2e} > {tol:.0e}")
            report.lines.append((key, not msgs, "; ".join(msgs) or "ok"))
    return report
