"""rnn-verify design notes: the policies the checks follow, cited by the catalog and the report.

The catalog cites these notes as "rnn-verify design notes, '<section>'". They ship with
the package; print them with ``python -m theory.notes`` (one section:
``python -m theory.notes "Numerical policy"``). The papers are cited by author and
year; full citations are in :mod:`theory.papers`.
"""

from __future__ import annotations

import sys

__all__ = ["NOTES", "TARGETS", "main", "section"]

#: exactness targets on well-conditioned problems (relative errors), see "Numerical policy"
TARGETS: dict[str, float] = {
    "BPTT vs explicit adjoint": 1e-12,
    "complex step vs BPTT": 1e-12,
    "Richardson central differences vs BPTT": 1e-8,
    "RTRL vs BPTT": 1e-11,
}

NOTES: dict[str, str] = {
    "Reference": """\
Every claim is checked against exact float64 references that cross-check each other
before anything else is trusted: BPTT by autograd on the unrolled graph, an
independent explicit adjoint recursion (backpropagation as a row vector times the step
Jacobians, Tallec & Ollivier 2017 §1), forward-mode influence matrices ds_t/dtheta,
complex-step derivatives (analytic cells only) and Richardson-extrapolated central
differences. Two independent reverse-mode computations must agree to round-off.""",
    "Numerical policy": """\
Exactness is judged against a predicted error budget, not a loose constant: float64
round-off grows with sequence length and conditioning, so each comparison states its
budget (C u m T kappa, kappa the measured cancellation) and the measured error. On
well-conditioned problems the design targets are also required: BPTT vs adjoint
<= 1e-12 relative, complex step vs BPTT <= 1e-12, Richardson central differences
<= 1e-8, RTRL vs BPTT <= 1e-11.

Unbiasedness is a statistical claim: its test has three outcomes (PASS, FAIL,
INCONCLUSIVE) and two stated error rates, a false-fail rate alpha for a correct
estimator and a certified bias bound delta (relative to ||g||) that a PASS guarantees
with probability >= 1 - beta. A sample-size planner says how many draws a (delta,
alpha, beta) needs; a sequential, anytime-valid test may stop early. Several
directions or quantities need multiplicity control (Holm or Bonferroni) or a joint
test. For tiny state sizes the expectation over all sign patterns is enumerated
exactly: unbiasedness is then a deterministic equality.

Rates and bounds (k lambda^k, O(1/lambda), O(1/N)): the slope is fitted with a
confidence interval on points above the round-off floor and compared with the rate
derived in theory/; the report gives the tightness (measured / bound) as well as the
verdict.

Every check carries a negative control showing that its fixture can tell a wrong
implementation apart; a check whose control does not come out as expected cannot
PASS. The tester is tested: every check is run against deliberately broken variants
(the mutant catalog: wrong sign, missing term, off-by-one truncation, biased noise,
wrong normaliser) and must FAIL them, and against correct implementations over many
seeds, where it must FAIL at most at its stated rate.

Round-off is not bias: what counts as "no noise" or "no deviation" comes from a
round-off model of the quantities at hand, not from a fixed relative cut.""",
    "GPU paths": """\
Every algorithm run on CUDA (float32 and float64, TF32 on and off) must agree with the
CPU float64 reference within a predicted rounding-error budget,
||r_gpu - r_cpu64|| <= C (u_gpu + u_64) sqrt(m L_eff + T_sum) ||r_bar||, where r_bar is
the result recomputed on absolute values, u the rounding unit, m the inner-product
length, L_eff the instance's effective memory and T_sum the number of summed steps
(verify.oracles.budget). UORO's noise is drawn once and replayed so that runs on different
devices are comparable.""",
    "Notes from reading the papers": """\
These were checked, not assumed; the catalog's errata record what was found.
* FPP Thm 1 as printed claims O(1/N) for constant step and batch size 1; the result
  it cites (Ghadimi, Lan & Zhang 2016, Cor. 3) also carries a variance term. The
  version that is true is checked and the report shows the plateau.
* FPP KKT recovery: the multiplier of constraint i is the adjoint of s_i with respect
  to the later losses only (App. B.2 Lemma 1); the penalty of eq. (11) is not divided
  by n while the loss is, so the multiplier estimate is scaled accordingly. Small
  lambda with free states can drive the prediction loss to ~0 by inflating W, so the
  check tests a premise (the iterates converge along lambda_k) and solves with Newton
  to ||grad L_lambda|| <~ 1e-10.
* Miller & Hardt 2018, Lemma 2 is stated with "=" and proved as "<="; step (c) of the
  proof has a typo. gamma is derived in theory.truncation from the proof's constants.
* UORO's unbiasedness holds for frozen parameters; rho_1 depends on nu but is symmetric
  under nu -> -nu, which is what the proof needs. Unbiasedness holds for any positive
  nu-independent rho_0 and any positive even rho_1: normaliser mistakes that keep
  these properties are invisible to an unbiasedness test and need a conformance or
  variance check.
* The RTRL convergence paper's formulas were lost in the text the toolkit was built
  from; the RTRL recursion is taken from Tallec & Ollivier 2017 eq. (4) and the §7.1-7.2
  experiments are rebuilt from the prose with documented constants.
* The influence-balancing system has a closed form at equilibrium, ds^1/dtheta =
  4p - 2n (Tallec & Ollivier 2017 §4); truncated BPTT gets its sign wrong for
  truncations well below n.""",
}


def section(name: str) -> str:
    """One section of the notes by its title (case-insensitive)."""
    for title, text in NOTES.items():
        if title.lower() == name.lower():
            return text
    raise KeyError(f"no section {name!r}; sections: {', '.join(NOTES)}")


def main(argv: list[str] | None = None) -> int:
    """``python -m theory.notes [SECTION]``: print the notes (or one section)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        titles = [t for t in NOTES if not args or t.lower() == " ".join(args).lower()]
        if not titles:
            section(" ".join(args))
    except KeyError as exc:
        print(f"theory.notes: {exc.args[0]}", file=sys.stderr)
        return 2
    for title in titles:
        print(f"== {title}\n\n{NOTES[title]}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
