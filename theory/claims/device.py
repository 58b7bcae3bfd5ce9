"""Claims of the ``device`` family: GPU paths agree with the CPU float64 reference within a predicted budget.

Not a claim of a paper but of the toolkit (rnn-verify design notes, 'GPU paths'): every
algorithm whose correctness the other families establish in float64 on the CPU
must give the same result on a GPU and in float32, up to rounding error that is
*predicted* (:mod:`verify.oracles.budget`, section 2: the |a|ᵀ|b| magnitude model with the
rounding unit, the accumulation length, the effective memory of the instance and
a calibrated constant), not bounded by a loose tolerance. Without a GPU the same
machinery runs as a CPU stand-in (float32 vs float64, permuted reduction orders),
and the GPU claims are SKIPPED with the reason.
"""

from __future__ import annotations

from theory.catalog import Claim

_ALGS = (
    "BPTT (reference.bptt_gradient), truncated BPTT (k=2/3), the truncated model (Miller-Hardt eq. (3)), "
    "RTRL (UORO eq. (4)), UORO rank 1 and 2 (Algorithm 1) and preactivation UORO with identical tabulated "
    "noise, FPP's per-sample gradients (eq. (7))"
)
_MODEL = (
    "||r_hat_row - r_row|| <= C (u_cand + u_ref) sqrt(m L_eff + T_sum) ||r_bar_row||,  r_bar = the result "
    "computed on magnitudes (|a|^T|b|) in float64, m = n + d + k, L_eff = effective memory from the "
    "step-Jacobian norms (<= T), T_sum = terms summed per entry, C = C_PARITY (calibrated)"
)
_ASSUME = (
    "the candidate and the float64 reference see the same inputs: theta, x, targets, s0, noise tables and "
    "FPP states rounded to the candidate's dtype (checked by construction in verify.gpu.parity)",
    "identical noise: UORO's nu and preactivation UORO's tau are drawn once on the CPU and fed to every run "
    "(verify.estimators.Tabulated)",
    "first-order rounding model; a relu preactivation within rounding distance of 0 can switch branch "
    "between precisions (not seen in the calibration; such an instance would show as an outlier)",
    "C is calibrated on CPU reduction orders (float32, permuted hidden units, float64 permuted); GPU "
    "reductions (tree/split-K) are assumed no worse than the worst calibrated order",
)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="device.float32-standin",
        title="CPU float32 and reordered float64 agree with CPU float64 within the predicted budget",
        paper="Tallec & Ollivier 2017",
        where="eq. (4), Algorithm 1; FPP paper (anonymous) eq. (7); rnn-verify design notes, 'GPU paths'",
        statement="The CPU stand-in of the GPU claim: for " + _ALGS + ", the float32 result (natural and "
        "permuted summation order) and the float64 result in a permuted summation order agree with the "
        "float64 result on the same rounded inputs, row by row, within the parity budget; a candidate that "
        "silently computes in float16 or bfloat16, and a UORO that draws fresh instead of identical noise, "
        "are caught.",
        math=_MODEL,
        assumptions=_ASSUME,
        check="verify.checks.device.float32_standin",
    ),
    Claim(
        id="device.cuda-parity",
        title="every algorithm on CUDA (float64; float32 with TF32 off and on) matches CPU float64 within budget",
        paper="Tallec & Ollivier 2017",
        where="eq. (4), Algorithm 1; FPP paper (anonymous) eq. (7); rnn-verify design notes, 'GPU paths'",
        statement="On a CUDA device, for " + _ALGS + ": float64 matches the CPU float64 reference to round-off "
        "(u = 2^-53 on both sides) and float32 within the float32 budget (u = 2^-24 with TF32 off, 2^-11 "
        "with TF32 on); the card, compute capability, dtype and TF32 settings are recorded. Runs when CUDA "
        "is available (the run's --device, or cuda:0 by default); SKIPPED with the reason otherwise.",
        math=_MODEL + ";  u_64 = 2^-53, u_32 = 2^-24, u_tf32 = 2^-11",
        assumptions=(*_ASSUME, "a CUDA device; TF32 only changes results on cards of compute capability >= 8.0"),
        check="verify.checks.device.cuda_parity",
        requires=("cuda",),
    ),
    Claim(
        id="device.gpu-unbiasedness",
        title="UORO is unbiased at GPU scale (Elman-tanh n = 256, T = 16, delta = 0.02, up to 4e6 draws)",
        paper="Tallec & Ollivier 2017",
        where="Prop. 1, Algorithm 1",
        statement="With frozen parameters, UORO's gradient estimates of the last step and of the whole "
        "sequence are unbiased, tested at a state size the CPU cannot afford with the anytime-valid "
        "sequential test of verify.stats on K = 32 random orthonormal projections (p ~ 7e4 is too large for "
        "a p x p covariance); a UORO with nu in {0, 1} at the same size must FAIL.",
        math="E[Q^T g_tilde_t] = Q^T dl_t/dtheta  and  E[Q^T sum_t g_tilde_t] = Q^T dL/dtheta,  Q in R^{p x K}",
        assumptions=(
            "frozen theta (Prop. 1); i.i.d. draws with finite covariance (Rademacher nu, finite T)",
            "K random directions drawn before the data: the certificate bounds the bias in their span, "
            "||Q^T (E g_tilde - g)|| < delta ||Q^T g||",
            "n = 256, T = 16 (n*T = 4096 noise signs), delta = 0.02; draws from the fused sampler in float32 "
            "where its rounding allowance (paired pilot x margin 4) is below delta/10 -- the truth is float64 on "
            "the float32-rounded problem and the allowance is subtracted from delta (verify.gpu.float32_sampling)",
            "a CUDA device (SKIPPED without); profile full only",
        ),
        check="verify.checks.device.gpu_unbiasedness",
        kind="statistical",
        profiles=("full",),
        requires=("cuda",),
    ),
)
