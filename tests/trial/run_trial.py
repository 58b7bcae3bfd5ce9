"""A new user's trial of ``rnn-verify run --impl`` (issue 37's must-show): implementations written for the trial.

Each implementation in ``tests/trial/impls/`` (written from the papers, in styles the toolkit's own examples do not
use) and each of its seeded bugs runs as a user would run it::

    python -m verify run --impl FAMILY=tests/trial/impls/FILE.py:OBJ --impl-only --out DIR -q [--dtype float32]

one at a time, and the trial records the exit code, each claim's verdict, the wall time and, for a FAIL, the
diagnosis; for a seeded bug it also records whether a FAIL's diagnosis names the part the bug is in (the words
that name it were chosen with the bug, before the run: :attr:`Trial.part_words`). Writes
``OUT/README.md`` (the table) and ``OUT/trial.json``; each run's report folder is ``OUT/runs/NAME/``.

Usage: ``python tests/trial/run_trial.py [--only NAME ...] [--out reports/user-trial] [--list]`` from the
repository root. A run's record is kept in ``OUT/records/NAME.json``, so ``--only`` reruns some and the table
is rebuilt from every record.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPLS = "tests/trial/impls"


@dataclass(frozen=True)
class Trial:
    name: str  #: the row's name (--only)
    family: str  #: --impl FAMILY
    target: str  #: FILE.py:OBJ under tests/trial/impls
    style: str  #: how it is written
    bug: str = ""  #: "" for a correct implementation, else what the seeded bug does
    part: str = ""  #: the part the bug is in
    part_words: tuple[str, ...] = ()  #: a FAIL's diagnosis names the part when it contains one of these
    args: tuple[str, ...] = ()  #: extra arguments (--dtype float32, -x, --claims ...)
    note: str = ""  #: what the reader should know (why -x, a claim left out ...)

    @property
    def expected_exit(self) -> int:
        return 1 if self.bug else 0

    def command(self, out: Path) -> list[str]:
        return [
            "nice", "-n", "10", sys.executable, "-m", "verify", "run",
            "--impl", f"{self.family}={IMPLS}/{self.target}", "--impl-only",
            "--out", str(out), "-q", *self.args,
        ]  # fmt: skip


TRIALS: tuple[Trial, ...] = (
    # ---- numpy RTRL, one flat theta in its own order [U, W, b, V, c]
    Trial("flat-rtrl", "rtrl", "flat_rtrl.py:TrialFlatRTRL", "numpy RTRL, one flat θ in its own order"),
    Trial("flat-rtrl-usign", "rtrl", "flat_rtrl.py:TrialFlatRTRLUSign", "numpy RTRL, one flat θ",
          bug="U block of ∂F/∂θ with the wrong sign", part="U block", part_words=("cell.U",)),
    Trial("flat-rtrl-f32", "rtrl", "flat_rtrl.py:TrialFlatRTRLF32", "numpy RTRL, one flat θ",
          bug="influence J stored in float32 between steps (code says float64)", part="precision of J",
          part_words=("float32 round-off",)),
    # ---- numpy UORO, weights stored (in, out)
    Trial("transposed-uoro", "uoro", "transposed_uoro.py:TrialTransposedUORO",
          "numpy UORO, W stored (in, out), h @ W; ν through the noise hook; g̃ pre"),
    Trial("transposed-uoro-rho1", "uoro", "transposed_uoro.py:TrialTransposedUORORho1", "numpy UORO, transposed W",
          bug="θ̃ update without 1/ρ₁", part="θ̃ update (ρ₁)", part_words=("theta~", "θ̃")),
    Trial("transposed-uoro-stale", "uoro", "transposed_uoro.py:TrialTransposedUOROStale", "numpy UORO, transposed W",
          bug="g̃ uses θ̃ of one step earlier", part="g̃ (stale θ̃)", part_words=("g~", "g̃")),
    # ---- KF-RTRL in numpy, batch-first, written against the estimator contract itself (no adapter)
    Trial("batchfirst-kfrtrl", "kfrtrl", "batchfirst_kfrtrl.py:kfrtrl",
          "numpy KF-RTRL, batch-first (M, ...) arrays, the online-estimator contract directly, signs via the hook"),
    Trial("batchfirst-kfrtrl-unew", "kfrtrl", "batchfirst_kfrtrl.py:kfrtrl_u_new_state", "numpy KF-RTRL, batch-first",
          bug="h_t instead of h_(t-1) in the Kronecker factor u", part="W block's factor u",
          part_words=("cell.W", "factor u", "u_t")),
    Trial("batchfirst-kfrtrl-rho2", "kfrtrl", "batchfirst_kfrtrl.py:kfrtrl_rho2_inverted",
          "numpy KF-RTRL, batch-first", bug="immediate term scaled by ρ₂ instead of 1/ρ₂",
          part="normalizer ρ₂ of the immediate term", part_words=("rho2", "ρ₂", "normalizer")),
    # ---- functional torch RTRL for a GRU only (cells=("gru",)), jacrev for both Jacobians
    Trial("gru-rtrl", "rtrl", "functional_gru_rtrl.py:TrialGRURTRL",
          "functional torch RTRL (pure init/step, torch.func.jacrev), GRU only, TorchStep"),
    Trial("gru-rtrl-staleh", "rtrl", "functional_gru_rtrl.py:TrialGRURTRLStaleH", "functional torch GRU RTRL",
          bug="∂F/∂θ evaluated at h_t instead of h_(t-1)", part="immediate Jacobian ∂F/∂θ",
          part_words=("∂F/∂θ", "dF/dtheta", "immediate"),
          note="the summary's first step t = 1 (where J_0 = 0, so only ∂F/∂θ enters) points at the immediate "
          "Jacobian for a reader who knows RTRL; the words do not say it, and the block named (cell.U) is not the "
          "bug's (every block is wrong)"),
    Trial("gru-rtrl-transds", "rtrl", "functional_gru_rtrl.py:TrialGRURTRLTransposedDs", "functional torch GRU RTRL",
          bug="recurrence with (∂F/∂s)ᵀ", part="state Jacobian ∂F/∂s (the recurrence)",
          part_words=("∂F/∂s", "dF/ds", "recurrence", "state Jacobian"),
          note="the first step t = 2 (the recurrence's first use) points at ∂F/∂s; the words do not say it"),
    # ---- torch.func UORO, Gaussian nu drawn by the step, tuple carry, flat theta~
    Trial("torchfunc-uoro", "uoro", "torchfunc_uoro.py:TrialTorchFuncUORO",
          "torch.func UORO (jvp/vjp), Gaussian ν drawn by the step, tuple carry, flat θ̃, g̃ post"),
    Trial("torchfunc-uoro-freshnu", "uoro", "torchfunc_uoro.py:TrialTorchFuncUOROFreshNu", "torch.func UORO",
          bug="θ̃ update uses a second, independent ν'", part="ν shared by eq. (5) and (6)",
          part_words=("ν", " nu ", "nu'", "noise")),
    # ---- float32 numpy RTRL, Williams-Zipser per-block sensitivities, declared dtype="float32"
    Trial("f32-rtrl", "rtrl", "float32_rtrl.py:TrialF32RTRL",
          "float32 numpy RTRL, per-block sensitivities p^k_ij, Batch1(dtype='float32')"),
    Trial("f32-rtrl-bnorec", "rtrl", "float32_rtrl.py:TrialF32RTRLBiasNoRec", "float32 numpy RTRL",
          bug="b's sensitivity without the recurrent term", part="b block", part_words=("cell.b",)),
    # ---- float32 numpy UORO: declared, undeclared with --dtype float32, and a seeded bug
    Trial("f32-uoro", "uoro", "float32_uoro.py:TrialF32UORO", "float32 numpy UORO, Batch1(dtype='float32'), g̃ pre"),
    Trial("f32-uoro-flag", "uoro", "float32_uoro.py:TrialF32UOROUndeclared",
          "float32 numpy UORO, undeclared, run with --dtype float32", args=("--dtype", "float32")),
    Trial("f32-uoro-rho0", "uoro", "float32_uoro.py:TrialF32UORORho0", "float32 numpy UORO (declared)",
          bug="θ̃ multiplied by ρ₀ instead of divided", part="θ̃ update (ρ₀)",
          part_words=("theta~", "θ̃", "rho0", "ρ₀")),
    # ---- SnAp-1 only: orders = (1,), NotImplementedError for any other order
    Trial("snap1", "snap", "snap1.py:snap1", "numpy SnAp-1 only (orders = (1,)), one trace per parameter"),
    Trial("snap1-bnodecay", "snap", "snap1.py:snap1_b_no_decay", "numpy SnAp-1 only",
          bug="b's trace without the W_ii decay", part="b block", part_words=("cell.b",)),
    # ---- UORO with theta~ over the recurrent parameters only, the readout's gradient exact
    Trial("recurrent-uoro", "uoro", "uoro_recurrent.py:TrialRecurrentUORO",
          "numpy UORO, θ̃ over W, U, b only (readout exact), g̃ pre"),
    Trial("recurrent-uoro-norho", "uoro", "uoro_recurrent.py:TrialRecurrentUORONoRho", "numpy UORO, θ̃ over W, U, b",
          bug="ρ₀ = ρ₁ = 1 (unbiased: only Algorithm 1's formulas differ)", part="normalizers ρ₀, ρ₁",
          part_words=("normalizer", "rho0", "rho1")),
)  # fmt: skip


def _verdicts(results: Path) -> tuple[dict[str, str], dict[str, str], float | None]:
    if not results.is_file():
        return {}, {}, None
    data = json.loads(results.read_text())
    verdicts = {c["id"]: c["verdict"] for c in data["claims"]}
    fails = {c["id"]: c["summary"] for c in data["claims"] if c["verdict"] == "FAIL"}
    return verdicts, fails, data["run"].get("wall_time")


def excerpt(summary: str, limit: int = 320) -> str:
    """A FAIL summary without its coverage tail (``covered: ...; left out ...``), cut to ``limit`` characters."""
    text = re.split(r";\s*covered: ", summary)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_one(trial: Trial, out: Path) -> dict:
    folder = out / "runs" / trial.name
    cmd = trial.command(folder)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    verdicts, fails, _ = _verdicts(folder / "results.json")
    diagnosis = {cid: excerpt(s) for cid, s in fails.items()}
    names = None
    if trial.bug:
        words = [w.lower() for w in trial.part_words]
        names = any(w in s.lower() for s in fails.values() for w in words)
    shown = " ".join(c if " " not in c else repr(c) for c in cmd[3:]).replace(sys.executable, "python")
    return {
        **asdict(trial),
        "command": "python " + shown.removeprefix(sys.executable + " "),
        "exit": proc.returncode,
        "as_expected": proc.returncode == trial.expected_exit,
        "verdicts": verdicts,
        "seconds": round(wall, 1),
        "diagnosis": diagnosis,
        "names_part": names,
        "stderr_tail": proc.stderr.strip().splitlines()[-3:] if proc.returncode not in (0, 1) else [],
        "stdout_tail": proc.stdout.strip().splitlines()[-12:],
        "load": os.getloadavg()[0],
        "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def _short(verdicts: dict[str, str]) -> str:
    return ", ".join(f"{cid} {v}" for cid, v in verdicts.items()) or "(none: see the exit)"


def write_readme(out: Path, records: list[dict]) -> None:
    ok = sum(r["as_expected"] for r in records)
    bugs = [r for r in records if r["bug"]]
    lines = [
        "# A new user's trial of `rnn-verify run --impl` (issue 37)",
        "",
        "Implementations written for this trial from the papers (not from `verify/examples/`), in styles the",
        "toolkit's own examples do not use, each with seeded bugs, run one at a time as a user would:",
        "",
        "```bash",
        "python tests/trial/run_trial.py --out reports/user-trial        # all; --only NAME ... for some",
        "# each row runs: python -m verify run --impl FAMILY=tests/trial/impls/FILE.py:OBJ --impl-only --out DIR -q",
        "```",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, shared with other agents' work (the load average",
        "when each row finished is in `trial.json`); every run under `nice -n 10`, every claim that exercises the",
        "implementation (`--impl-only`, no `--claims`).",
        "",
        f"**{ok} of {len(records)} rows as expected** (correct: exit 0; seeded bug: exit 1); "
        f"{sum(bool(r['names_part']) for r in bugs)} of {len(bugs)} bug diagnoses name the part (judged by the",
        "words listed per row, chosen with the bug before the run).",
        "",
        "| implementation | style | bug (or correct) | part broken | exit | verdicts | time | diagnosis (excerpt) "
        "| names the part? |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        diag = "<br>".join(f"`{cid}`: {d}" for cid, d in r["diagnosis"].items()) or "--"
        diag = diag.replace("|", "\\|")
        names = "--" if not r["bug"] else ("yes" if r["names_part"] else "**no**")
        if r["bug"]:
            names += f" (words: {', '.join(r['part_words'])})"
        exit_txt = f"{r['exit']}" + ("" if r["as_expected"] else f" (**expected {r['expected_exit']}**)")
        lines.append(
            f"| `{r['name']}` | {r['style']} | {r['bug'] or 'correct'} | {r['part'] or '--'} | {exit_txt} | "
            f"{_short(r['verdicts'])} | {r['seconds']:.0f} s | {diag} | {names} |"
        )
    notes = [r for r in records if r["note"]]
    if notes:
        lines += ["", "Notes:", ""] + [f"* `{r['name']}`: {r['note']}" for r in notes]
    lines += ["", "Commands, one per row:", "", "```bash"] + [r["command"] for r in records] + ["```", ""]
    (out / "README.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these rows (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "user-trial")
    ap.add_argument("--list", action="store_true", help="print the rows and exit")
    args = ap.parse_args(argv)
    if args.list:
        for t in TRIALS:
            print(f"{t.name:28s} {t.family:6s} {t.target:45s} {t.bug or 'correct'}")
        return 0
    known = {t.name for t in TRIALS}
    unknown = sorted(set(args.only or ()) - known)
    if unknown:
        ap.error(f"--only: unknown rows {unknown}; known: {sorted(known)}")
    out: Path = args.out
    (out / "records").mkdir(parents=True, exist_ok=True)
    for t in TRIALS:
        if args.only and t.name not in args.only:
            continue
        print(f"[trial] {t.name} ...", flush=True)
        rec = run_one(t, out)
        (out / "records" / f"{t.name}.json").write_text(json.dumps(rec, indent=1, ensure_ascii=False))
        print(f"[trial] {t.name}: exit {rec['exit']} ({rec['seconds']} s) {_short(rec['verdicts'])}", flush=True)
    order = [t.name for t in TRIALS]
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json") if p.stem in known]
    records.sort(key=lambda r: order.index(r["name"]))
    (out / "trial.json").write_text(
        json.dumps(
            {"machine": platform.machine(), "cpus": os.cpu_count(), "rows": records}, indent=1, ensure_ascii=False
        )
    )
    write_readme(out, records)
    return 0 if all(r["as_expected"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
