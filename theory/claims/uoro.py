"""Claims of the ``uoro`` family that are deterministic: the enumerated expectation equals RTRL.

(Statistical claims for larger sizes -- unbiasedness with stated error rates,
rank-r variance, preactivation variance -- live in further ``uoro_<topic>`` modules.)
"""

from __future__ import annotations

from theory.catalog import Claim

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="uoro.exact-expectation",
        title="UORO is unbiased, exactly: the expectation over all sign patterns equals RTRL",
        paper="Tallec & Ollivier 2017",
        where="Prop. 1 (App. A), Algorithm 1, §3 (UORO-T, rank r); "
        "Cooijmans & Martens 2019 'Projecting in preactivation space'",
        statement="For frozen θ, the expectation of UORO's s̃_t ⊗ θ̃_t and g̃_t over ALL Rademacher sign "
        "patterns of ν (enumerated: n·t·r small) equals ∂s_t/∂θ and ∂l_t/∂θ to float64 round-off; the same holds "
        "for rank-r UORO, for UORO-T (at block boundaries for s̃⊗θ̃, at every step for g̃) and for "
        "preactivation-space UORO on Elman cells (τ one sign per step).",
        math="2^{-K} Σ_{ν ∈ {±1}^K} s̃_t ⊗ θ̃_t = ∂s_t/∂θ,  2^{-K} Σ_ν g̃_t = ∂l_t/∂θ  (K = number of signs drawn)",
        assumptions=(
            "float64; the references are verify.oracles.bptt's influence matrices and per-step BPTT gradients",
            "budget: C·u·(m·T + K)·κ, with κ the measured cancellation among the 2^K patterns times the "
            "reference's κ; the design target 1e-12 (rnn-verify design notes, 'Numerical policy') is required as well",
            "negative controls that must FAIL: ν drawn from {0,1}; ρ₀ applied to s̃ only; a ν-asymmetric ρ₁",
            "positive controls that must PASS (error within their own round-off budget), because unbiasedness "
            "is invariant to any positive ν-independent ρ₀ and any positive even ρ₁: inverted ρ₀ ratio, ρ₀ of the "
            "previous step, ρ₁ ≡ 1 -- these mutants are invisible to an expectation check and need a conformance "
            "or variance check",
        ),
        check="verify.checks.uoro.check_exact_expectation",
    ),
)
