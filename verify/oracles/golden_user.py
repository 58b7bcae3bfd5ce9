"""Check a user's own arrays against a golden pair, and say what a pattern of failures points to.

``rnn-verify golden --check mine.npz --reference golden.npz`` (issue 25). The user's
file is a plain ``.npz`` holding only the arrays they computed, named like the golden
ones (``<case>__<quantity>``), for any subset of cases and quantities; it has no
header and no hashes (integrity hashes belong to the published pair, which is
validated and hash-checked here as the reference). Each array is compared with the
reference by the header's stated norm (:data:`verify.oracles.golden_defs.TOLERANCE`):
``max|a - r| <= check_rtol * max|r|``.

* an array name that is not a quantity of the reference (a typo) is an input
  error naming it, with the closest known name -- it must not silently check
  nothing;
* families not supplied are listed (not an error);
* a failing array names the parameter blocks (layout) that carry the error;
* :func:`diagnose` maps the pattern of failing families to the likely mistake
  (:data:`DIAGNOSES`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verify.errors import InvalidArgument, InvalidFile
from verify.oracles.golden import HEADER_KEY, INPUT_ARRAYS, SEP, _sha, golden_pair, load_golden, normwise_error
from verify.schema import load_npz

__all__ = ["DIAGNOSES", "FAMILIES", "UserCheck", "check_user_results", "diagnose", "family_of"]

#: families in the order the computation builds them (a failure early in it explains later ones)
FAMILIES = (
    "inputs",
    "states",
    "losses",
    "influence",
    "gradient",
    "per_step_gradients",
    "truncated_model",
    "tbptt",
    "fpp",
)


def family_of(quantity: str) -> str:
    """The family of a quantity name (``truncated_model_states_k2`` -> ``truncated_model``)."""
    if quantity in INPUT_ARRAYS:
        return "inputs"
    if quantity in ("losses", "total_loss"):
        return "losses"
    for prefix in ("truncated_model", "tbptt", "fpp"):
        if quantity.startswith(prefix + "_"):
            return prefix
    return quantity


#: (failing families, families that verify or were not supplied, likely mistake): the first rows whose
#: pattern matches are printed; "verify" means "not failing" (verified or not supplied)
DIAGNOSES: tuple[tuple[frozenset[str], frozenset[str], str], ...] = (
    (
        frozenset({"inputs"}),
        frozenset(),
        "inputs: your copy of theta / inputs / targets / s0 differs from the reference -- you are not computing on "
        "the golden problem (layout order, one-hot targets, s0)",
    ),
    (
        frozenset({"states"}),
        frozenset({"inputs"}),
        "forward pass F: the cell's step formula (definitions.step), the parameter layout (row-major blocks; "
        "LSTM gate order f,i,o,z; GRU block order r,z,n) or the time indexing (inputs[t-1] = x_t, states[0] = "
        "s_0); everything computed from the states fails with it",
    ),
    (
        frozenset({"losses"}),
        frozenset({"inputs", "states"}),
        "readout or loss: obs(s) (LSTM: h, the second half of s), y = V obs(s) + c_out, the 1/2 of the squared "
        "error, log_softmax over the last axis, the sum over the batch",
    ),
    (
        frozenset({"influence"}),
        frozenset({"inputs", "states"}),
        "the Jacobian recursion J_t = dF/ds J_{t-1} + dF/dtheta (influences off while the states verify): a "
        "transposed dF/ds (its transpose used in the product), J_0 not 0, or dF/dtheta taken at the wrong step",
    ),
    (
        frozenset({"gradient", "per_step_gradients"}),
        frozenset({"inputs", "states", "losses", "influence"}),
        "gradient assembly (gradients and per-step gradients off while the states and influences verify): the "
        "immediate term partial l_t/partial theta at fixed s_t -- the readout's parameters readout.* -- missing "
        "or wrong, or the readout Jacobian dl_t/ds_t",
    ),
    (
        frozenset({"per_step_gradients"}),
        frozenset({"inputs", "states", "gradient"}),
        "per-step gradients (their sum is right): per_step_gradients[t-1] is the TOTAL derivative dl_t/dtheta "
        "through s_1..s_t, not the immediate partial alone nor backprop's suffix sum over u >= t; row t-1 is step t",
    ),
    (
        frozenset({"gradient"}),
        frozenset({"inputs", "states", "per_step_gradients"}),
        "the total: gradient = sum over t of per_step_gradients[t-1] (L sums the per-step losses; no mean)",
    ),
    (
        frozenset({"truncated_model"}),
        frozenset({"inputs", "states"}),
        "truncated model: h_t^k restarts from ZEROS k steps back (from s0 where t <= k) and applies k transitions; "
        "the 'final' gradient differentiates l_T(h_T^k) only",
    ),
    (
        frozenset({"tbptt"}),
        frozenset({"inputs", "states", "gradient"}),
        "truncated BPTT: the window starts at the exact s_{t-k} = states[t-k], held fixed (no derivative through "
        "it), differentiates k transitions, and sums over t",
    ),
    (
        frozenset({"fpp"}),
        frozenset({"inputs"}),
        "FPP: L_i = l(readout(obs(s_hat_i)), q_i) + (lambda/2) ||S[i] - s_hat_i||^2 with lambda = 1 (lambda/2, "
        "not lambda), one L_i per sample i (not summed over the window), s_hat_i from S[i-m] by m transitions, "
        "state gradients dense over all T+1 rows of S",
    ),
)


def diagnose(status: Mapping[str, Mapping[str, bool]], batched: Sequence[str] = ()) -> list[str]:
    """Likely mistakes from ``status[family][case] = verified?`` (absent: not supplied).

    Each row of :data:`DIAGNOSES` whose failing families all fail (in some case) while its
    other families do not fail is reported; then, per failing family, the cases it fails in
    when it verifies in others.
    """
    failing = {f for f, by_case in status.items() if not all(by_case.values())}
    if not failing:
        return []
    out = []
    for fails, fine, text in DIAGNOSES:
        if fails <= failing and not (fine & failing):
            out.append(f"{', '.join(sorted(fails))} off -> {text}")
    if not out:
        first = min(failing, key=FAMILIES.index)
        out.append(
            f"{', '.join(f for f in FAMILIES if f in failing)} off: start with {first}, the earliest in the "
            f"computation (what is built from it fails with it)"
        )
    for fam in (f for f in FAMILIES if f in failing):
        bad = sorted(c for c, ok in status[fam].items() if not ok)
        good = sorted(c for c, ok in status[fam].items() if ok)
        if good:
            note = (
                " -- only the batched case: each batch element has its own state and J, and the loss sums over "
                "the batch"
                if set(bad) <= set(batched)
                else " -- look at what those cells do differently (their definitions.step)"
            )
            out.append(f"{fam} fails only in {', '.join(bad)} (verifies in {', '.join(good)}){note}")
    return out


@dataclass
class UserCheck:
    """Outcome of :func:`check_user_results`: one line per supplied array, the unsupplied, the diagnosis."""

    path: str
    reference: str
    rtol: float
    lines: list[tuple[str, bool, str]] = field(default_factory=list)
    not_supplied: list[str] = field(default_factory=list)
    diagnosis: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.lines) and all(ok for _, ok, _ in self.lines)

    @property
    def failures(self) -> list[str]:
        return [name for name, ok, _ in self.lines if not ok]

    def format(self) -> str:
        n_ok = sum(ok for _, ok, _ in self.lines)
        out = [
            f"golden check of {self.path} (your arrays) against {self.reference}: {n_ok} of {len(self.lines)} "
            f"arrays verify (normwise: max|a - r| <= {self.rtol:.0e} * max|r|)"
        ]
        out += [f"  {'ok  ' if ok else 'FAIL'} {name}: {msg}" for name, ok, msg in self.lines]
        if self.not_supplied:
            out.append("not supplied (not checked):")
            out += [f"  {m}" for m in self.not_supplied]
        if self.diagnosis:
            out.append("diagnosis (what the pattern of failures points to):")
            out += [f"  - {d}" for d in self.diagnosis]
        out.append("OK" if self.ok else f"FAILED: {', '.join(self.failures)}")
        return "\n".join(out)


def _load_user(path: Path) -> dict[str, np.ndarray]:
    file = str(path)
    if path.suffix != ".npz":
        raise InvalidArgument("--check", file, "with --reference, FILE is your results: a .npz of your arrays")
    arrays = load_npz(path)
    if HEADER_KEY in arrays:
        raise InvalidFile(
            file,
            HEADER_KEY,
            "(golden header)",
            "your arrays only -- this is a golden pair; drop --reference to re-verify it as a golden file",
        )
    if not arrays:
        raise InvalidFile(file, "", None, "at least one array named <case>__<quantity> (the file holds none)")
    for key, a in arrays.items():
        if a.dtype.kind not in "fiu" or a.dtype.kind == "b":
            raise InvalidFile(file, key, f"dtype {a.dtype}", "a real numeric array (float64 preferably)")
    return arrays


def _unknown(names: Sequence[str], known: Sequence[str], file: str) -> InvalidArgument:
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return InvalidFile(
        file,
        names[0],
        "(array name)",
        f"only arrays the reference has, named <case>__<quantity>; unknown: {', '.join(parts)}",
    )


def _blocks(err: np.ndarray, layout: Sequence[Mapping[str, Any]], tol: float) -> str:
    """The parameter blocks carrying the error of a (…, p) array (where its last axis is θ)."""
    flat = np.abs(err).reshape(-1, err.shape[-1]).max(axis=0)
    worst = float(flat.max())
    names = [
        str(e["name"])
        for e in layout
        if 0 <= e["offset"] < e["offset"] + e["size"] <= flat.size
        and flat[e["offset"] : e["offset"] + e["size"]].max() > tol * worst
    ]
    return f"; the error is in {', '.join(names)}" if names and len(names) < len(layout) else ""


def _compare(a: np.ndarray, r: np.ndarray, tol: float, layout: Sequence[Mapping[str, Any]]) -> str:
    """``'verifies (error)'`` when ``a`` verifies against ``r``; else why not (naming the θ blocks in error)."""
    if a.shape != r.shape:
        return f"shape {list(a.shape)}, the reference's is {list(r.shape)} (shapes as the header states them)"
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        return "holds NaN or infinite entries"
    if not r.size:
        return "verifies (empty)"
    rel = normwise_error(a, r)
    if rel <= tol:
        return f"verifies ({rel:.1e})"
    where = _blocks(a - r, layout, 1e-3) if layout and r.ndim else ""
    return f"max|a - r| / max|r| = {rel:.2e} > {tol:.0e}{where}"


def check_user_results(results: Path | str, reference: Path | str, rtol: float | None = None) -> UserCheck:
    """Compare the arrays of ``results`` (a plain .npz, any subset) with the golden pair ``reference``.

    The reference is validated (:func:`verify.oracles.golden.load_golden`) and its arrays
    checked against their SHA-256; the results are not (no hashes). Unknown names,
    a golden header in the results, non-numeric arrays or an empty file raise
    :class:`~verify.errors.InvalidArgument` (CLI exit 2).
    """
    header, ref = load_golden(reference)
    ref_npz, _ = golden_pair(reference)
    for case in header.cases:
        for q, entry in case.arrays.items():
            key = f"{case.name}{SEP}{q}"
            if _sha(ref[key]) != entry.sha256:
                raise InvalidFile(
                    str(ref_npz), key, "(SHA-256 differs)", "the published array (the reference is damaged)"
                )
    user_path = Path(results)
    user = _load_user(user_path)
    unknown = sorted(k for k in user if k not in ref)
    if unknown:
        raise _unknown(unknown, sorted(ref), str(user_path))
    tol = float(rtol if rtol is not None else header.check_rtol)
    report = UserCheck(str(user_path), str(ref_npz), tol)
    status: dict[str, dict[str, bool]] = {}
    absent: dict[str, list[str]] = {}  # family -> supplied cases without any array of it
    partial: list[str] = []  # arrays missing from a family supplied in that case
    untouched = [c.name for c in header.cases if not any(k.startswith(c.name + SEP) for k in user)]
    for case in header.cases:
        layout = _layout(header.raw, case.name)
        supplied = {family_of(q) for q in case.arrays if f"{case.name}{SEP}{q}" in user}
        for q in case.arrays:
            key, fam = f"{case.name}{SEP}{q}", family_of(q)
            if key not in user:
                if fam in supplied and fam != "inputs":
                    partial.append(key)
                elif fam != "inputs" and case.name not in untouched and case.name not in absent.get(fam, []):
                    absent.setdefault(fam, []).append(case.name)
                continue
            why = _compare(user[key], ref[key], tol, layout if "gradient" in q or q == "influence" else [])
            ok = why.startswith("verifies")
            report.lines.append((key, ok, why))
            by_case = status.setdefault(fam, {})
            by_case[case.name] = by_case.get(case.name, True) and ok
    if untouched:
        report.not_supplied.append(f"cases: {', '.join(untouched)}")
    for fam in FAMILIES:
        if fam in absent:
            report.not_supplied.append(f"{fam}: in {', '.join(absent[fam])}")
    if partial:
        report.not_supplied.append(f"arrays of families otherwise supplied: {', '.join(partial)}")
    batched = [c["name"] for c in header.raw["cases"] if c.get("sizes", {}).get("batch")]
    report.diagnosis = diagnose(status, batched)
    return report


def _layout(raw: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    """The layout of a case from the raw header ([] where the header has none)."""
    for c in raw.get("cases", []):
        if c.get("name") == name:
            lay = c.get("layout", [])
            ok = isinstance(lay, list) and all(
                isinstance(e, dict) and isinstance(e.get("offset"), int) and isinstance(e.get("size"), int) for e in lay
            )
            return lay if ok else []
    return []
