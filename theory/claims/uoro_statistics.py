"""Statistical claims of the ``uoro`` family: unbiasedness with stated error rates, variance, REINFORCE.

The deterministic claim (exact enumeration for tiny sizes) is in :mod:`theory.claims.uoro`;
these are for sizes beyond enumeration and for second moments. Every statistical
claim has a false-fail rate α, its share of the ci gate's family-wise budget planned by the claims' cost
(:mod:`theory.gate`; :data:`theory.catalog.GATE_ALPHA`) and, where it certifies a bias bound, β = 1e-3
and δ = 0.02 relative to ‖g‖ (rnn-verify design notes, 'Numerical policy'); the engine and its
assumptions are in :mod:`verify.stats.unbiased`.
"""

from __future__ import annotations

from theory.catalog import Claim
from theory.gate import REFERENCE_ALPHA, planned_alpha
from theory.rates import Rate

#: the level the statistical UORO claims had before the α plan (each claim's own is ``planned_alpha(id)``,
#: :mod:`theory.gate`); a check run outside a claim (a pilot, a bench) uses it
ALPHA = REFERENCE_ALPHA
#: miss probability of each normalizer alternative ``uoro.variance-matches-algorithm-1`` must tell apart (its
#: control ρ₁ ≡ 1 and the kill table's ρ₁ without sqrt): the draws are planned from exact moments to reach it
VARIANCE_CONTROL_BETA = 1e-5

_STAT = (
    "draws are i.i.d. (independent noise per sample; checked indirectly: a vectorization bug that shares ν "
    "across samples is a mutant that must FAIL) with finite covariance -- UORO's draws are bounded "
    "(Rademacher ν, finite T); error rates are those of the Gaussian approximation of the sample mean "
    "with plug-in covariance (asymptotic; calibrated over >= 1000 seeds in the slow suite)",
    "frozen parameters (eta = 0): Prop. 1 is stated for eta_t = 0",
    "PASS needs M >= 1000 and no single draw carrying > 10% of the scatter (heavy-tail diagnostic)",
)

#: the second rate of ``uoro.reinforce-link``: without a baseline, E||R - g||^2 grows like sigma^-2
NO_BASELINE_RATE = Rate("sigma^-2 (no baseline)", "log sigma", "log E||R - g||^2 without a baseline", -2.0, "equal")

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="uoro.unbiased-statistical",
        title="UORO is unbiased (statistical test with certified bias bound) on Elman-tanh, LSTM and GRU",
        paper="Tallec & Ollivier 2017",
        where="Prop. 1 (App. A), Algorithm 1, eq. (5)-(7)",
        statement="For frozen θ, E g̃_t = ∂l_t/∂θ at t ∈ {2, ⌊(T+1)/2⌋+1, T}, E[s̃_T ⊗ θ̃_T] = ∂s_T/∂θ and "
        "E Σ_t g̃_t = ∇L, on problems with n·T ≥ 64 noise signs per run (ci; ≥ 256 in full: 2^64 sign patterns, "
        "beyond any enumeration): "
        f"no bias is detected at false-fail rate α = {planned_alpha('uoro.unbiased-statistical'):g} and the bias is "
        "certified below 0.02·‖g‖ for every "
        "quantity at confidence 1 − β = 0.999 (sequential anytime-valid test; planned vs used draws reported).",
        math="||E[s~_t (x) theta~_t] - ds_t/dtheta|| < 0.02 ||ds_t/dtheta||, "
        "||E g~_t - dl_t/dtheta|| < 0.02 ||dl_t/dtheta||",
        assumptions=(
            *_STAT,
            "CI sizes: elman-tanh n=4, T=16; lstm H=2 (n=4), T=16; gru n=2, T=32 (n·T = 64); full: n=4/H=2/4, "
            "T=64 (n·T = 256); default scales (recurrent spectral norm ≈ 0.45, contractive): trΣ/‖g‖² of the "
            "influence ≈ 4-9, ~2e5 draws per problem for delta = 0.02, drawn by the fused sampler "
            "(verify.estimators.fused, the same draws as init/step)",
            "negative control: uoro.theta-tilde-scaled must FAIL",
        ),
        check="verify.checks.uoro_statistics.check_unbiased_statistical",
        kind="statistical",
        alpha=planned_alpha("uoro.unbiased-statistical"),
    ),
    Claim(
        id="uoro.truncated-unbiased",
        title="UORO-T is unbiased",
        paper="Tallec & Ollivier 2017",
        where="§3 (Multi-step UORO: Algorithm 1 applied to F^T)",
        statement="UORO on blocks of T steps (the last T steps backpropagated exactly) stays unbiased: E g̃_t = "
        "∂l_t/∂θ at every t, E Σ g̃_t = ∇L, and E[s̃ ⊗ θ̃] = ∂s_t/∂θ at block boundaries; bias certified below "
        f"0.02·‖g‖ at 1 − β = 0.999, false-fail rate {planned_alpha('uoro.truncated-unbiased'):g}.",
        math="E g~_t = dl_t/dtheta (UORO on F^T)",
        assumptions=(
            *_STAT,
            "CI: elman-tanh n=4, T=16, blocks of 4 (full: T=64); influence at the block boundaries T/2 and T; "
            "negative control: θ̃ scaled by 2",
        ),
        check="verify.checks.uoro_statistics.check_truncated_unbiased",
        kind="statistical",
        alpha=planned_alpha("uoro.truncated-unbiased"),
    ),
    Claim(
        id="uoro.rank-unbiased",
        title="rank-r UORO is unbiased",
        paper="Tallec & Ollivier 2017",
        where="§3 (higher-rank estimates: r pairs (s̃, θ̃), g̃ averaged)",
        statement="With r independent pairs, E[(1/r) Σ s̃ ⊗ θ̃] = ∂s_t/∂θ and E g̃_t = ∂l_t/∂θ; bias certified "
        f"below 0.02·‖g‖ at 1 − β = 0.999, false-fail rate {planned_alpha('uoro.rank-unbiased'):g}.",
        math="E (1/r) sum_i s~_t^i (x) theta~_t^i = ds_t/dtheta",
        assumptions=(
            *_STAT,
            "CI: elman-tanh n=4, T=16, r=4 (full: T=64, r=8); influence at t=T; negative control: ν ∈ {0,1}",
        ),
        check="verify.checks.uoro_statistics.check_rank_unbiased",
        kind="statistical",
        alpha=planned_alpha("uoro.rank-unbiased"),
    ),
    Claim(
        id="uoro.rank-variance",
        title="rank-r UORO's variance falls as 1/r",
        paper="Tallec & Ollivier 2017",
        where="§3 ('r = 2 visibly reduced variance'); exact for r independent unbiased pairs",
        statement="E‖ĝ_r − g‖² = tr Cov(ĝ_1)/r: the slope of log E‖ĝ_r − g‖² on log r (r ∈ {1, 2, 4}; full: "
        "{1, 2, 4, 8}) has a (1 − α)-confidence interval that contains −1 and is narrower than ±0.15.",
        math="log E||g_r - g||^2 = const - log r",
        assumptions=(
            "weighted least squares with delta-method standard errors of log mean squared errors (asymptotic)",
            "negative control: pairs sharing one ν (uoro.rank-shared-noise: unbiased, variance not reduced)",
        ),
        check="verify.checks.uoro_variance.check_rank_variance",
        kind="rate",
        rate=Rate("1/r (r independent pairs)", "log r", "log E||g_r - g||^2", -1.0, "equal"),
        alpha=planned_alpha("uoro.rank-variance"),
    ),
    Claim(
        id="uoro.preactivation",
        title="preactivation-space UORO is unbiased and has lower variance than UORO",
        paper="Cooijmans & Martens 2019",
        where="'Projecting in preactivation space' (H̃_t, ã_t recursion)",
        statement="On an Elman-tanh problem, preactivation-space UORO is unbiased (bias certified below 0.02·‖g‖ at "
        "1 − β = 0.999) and E‖ĝ_pre − g‖² / E‖ĝ_UORO − g‖² (total gradient) has a (1 − α/2)-CI below 1; the ratio "
        "is reported.",
        math="E g~pre_t = dl_t/dtheta,  E||g~pre - g||^2 < E||g~uoro - g||^2",
        assumptions=(
            *_STAT,
            "γ_t, β_t of the preactivation recursion: UORO's rule with Frobenius norms (the post leaves them open)",
            "CI: elman-tanh n=4, T=16 (full: T=64); influence at t=T; negative control: τ ∈ {0, 1}",
        ),
        check="verify.checks.uoro_statistics.check_preactivation",
        kind="statistical",
        alpha=planned_alpha("uoro.preactivation"),
    ),
    Claim(
        id="uoro.variance-growth",
        title="UORO's variance vs time and state size (measurements)",
        paper="Cooijmans & Martens 2019",
        where="'Variance reduction through iterative rescaling', 'Theoretical framework' (V(Q): products of traces)",
        statement="The relative variance E‖g̃_t − g_t‖²/‖g_t‖² of UORO on Elman-tanh problems is measured for "
        "t = 1..T and n ∈ {2, 4, 8, 16}; growth exponents in n and t are reported with CIs. The measurement is "
        "checked where it can be: for n = 2, t ≤ 6 it must agree with the exact variance over all 2^{nt} sign "
        "patterns (z-tests, level α); a UORO whose ν is standard normal (declared, or agreeing with that law "
        "where ν's law is not declared: each law then at α/2) with Algorithm 1's under Gaussian ν (a Monte "
        "Carlo reference, two-sample z-tests).",
        math="v_t(n) = E||g~_t - dl_t/dtheta||^2 / ||dl_t/dtheta||^2",
        assumptions=(
            "a measurement (report data); the verdict is the agreement with exact enumeration where possible",
            "ν's law: Rademacher signs (Algorithm 1) or standard normal (the unbiased variant of Tallec & Ollivier "
            "2017 App. A); an undeclared law is tested against both, each at α/2",
            "negative control: the measured variance of ρ₀ ≡ 1 must disagree with Algorithm 1's exact variance",
        ),
        check="verify.checks.uoro_variance.check_variance_growth",
        kind="reproduction",
        alpha=planned_alpha("uoro.variance-growth"),
    ),
    Claim(
        id="uoro.reinforce-link",
        title="REINFORCE on the state-perturbed RNN tends to UORO as σ → 0; without a baseline its variance grows",
        paper="Cooijmans & Martens 2019",
        where="'A link to REINFORCE' (Taylor expansion of L_t w̄_t)",
        statement="With the same noise u, REINFORCE with baseline L_t|_{u=0} differs from the post's UORO estimate by "
        "O(σ) (slope of log RMS difference on log σ: CI ∋ 1, > 0); without a baseline E‖R − g‖² grows like σ^{-2} "
        "(slope CI ∋ −2, < 0).",
        math="(L_t - b) w̄_t = J^{L_t}_{h_t} h~_t w~_t^T + O(sigma);  Var[L_t w̄_t] ~ sigma^{-2}",
        assumptions=(
            "Q_t = I; σ ∈ {0.05, ..., 0.003125} (the σ → 0 regime); the baseline is the exact noiseless loss",
            "negative control: the score without its 1/σ",
        ),
        check="verify.checks.uoro_variance.check_reinforce_link",
        kind="rate",
        rate=Rate(
            "O(sigma) (Taylor expansion of L_t w_t)", "log sigma", "log RMS(REINFORCE - UORO of the post)", 1.0, "equal"
        ),
        alpha=planned_alpha("uoro.reinforce-link"),
    ),
    Claim(
        id="uoro.algorithm-1-conformance",
        title="the toolkit's UORO follows Algorithm 1 exactly (noise law and formulas, tabulated noise)",
        paper="Tallec & Ollivier 2017",
        where="Algorithm 1 (ν random signs; ρ₀, ρ₁ with ε = 1e-7; eq. (5)-(6))",
        statement="The estimator's ν are fair, independent signs ±1; with tabulated ν its g̃_t, s̃_t, θ̃_t equal an "
        "independent dense-Jacobian evaluation of Algorithm 1 to a relative 1e-12 on Elman-tanh, LSTM, GRU, rank 1 "
        "and 2. Sees the normalizer mistakes that leave the mean unchanged.",
        math="UORO(ν table) == Algorithm1_dense(ν table)  (rel. err <= 1e-12)",
        assumptions=(
            "float64; binomial tests of the noise law at level α (Bonferroni)",
            "negative control: uoro.rho0-inverted",
        ),
        check="verify.checks.uoro_mutants.check_algorithm1_conformance",
        kind="deterministic",
        alpha=planned_alpha("uoro.algorithm-1-conformance"),
    ),
    Claim(
        id="uoro.variance-matches-algorithm-1",
        title="the toolkit's UORO has Algorithm 1's variance (two-sample tests on second moments)",
        paper="Tallec & Ollivier 2017",
        where="Algorithm 1 (ρ₀, ρ₁ 'aimed at minimizing variance'); App. A (unbiased for any such ρ's)",
        statement="On the same problem, the squared errors ‖ĝ − g‖² of the toolkit's UORO and of an independent "
        "Algorithm 1 have equal means (Welch z) and equal laws (Mann–Whitney), level α; the variance of the "
        "alternatives to the paper's normalizers is reported relative to the paper's.",
        math="E||g~ - g||^2 (toolkit) = E||g~ - g||^2 (Algorithm 1)",
        assumptions=(
            "fixture where the normalizers matter: elman-tanh n=3, T=6, inputs x5",
            "negative control: uoro.rho1-constant (unbiased, different variance)",
        ),
        check="verify.checks.uoro_variance_matches.check_variance_matches",
        kind="statistical",
        alpha=planned_alpha("uoro.variance-matches-algorithm-1"),
        control_beta=2 * VARIANCE_CONTROL_BETA,
    ),
    Claim(
        id="uoro.mutants-caught",
        title="every UORO-family mutant FAILs the checks it is visible to, and no unbiased one FAILs an "
        "unbiasedness test (kill table, both sides)",
        paper="rnn-verify design notes",
        where="'Numerical policy' (the tester is tested); Tallec & Ollivier 2017 Algorithm 1, App. A",
        statement="Each mutant of verify.impl.mutants.uoro (wrong noise laws, normalizers breaking the ν → −ν "
        "symmetry, "
        "missing δθ, reused or shared ν, scaled θ̃, and the mean-invisible ρ₀/ρ₁ alternatives) gets FAIL from every "
        "check named in its visible_to; the unbiased ones (stale or inverted ρ₀: variance ×1e13; ρ₁ ≡ 1, ρ₁ without "
        "its square root, rank-r with shared ν) get PASS or INCONCLUSIVE, never FAIL, from the unbiasedness test "
        "(verify.impl.mutants.uoro.MUST_NOT_FAIL). The data carry the sequential test's operating characteristic on "
        "three biased mutants (bias/‖g‖ vs draws to FAIL).",
        math="for all m, c in visible_to(m): verdict(c, m) = FAIL; for all m, c in MUST_NOT_FAIL(m): "
        "verdict(c, m) ≠ FAIL",
        assumptions=(
            "each check runs with its own error rates; the biased mutants are far outside δ",
            "the must-not-FAIL runs use a small budget of draws: a false FAIL can happen at any look, a PASS is "
            "not required",
        ),
        check="verify.checks.uoro_mutants.check_mutants_caught",
        kind="statistical",
        alpha=planned_alpha("uoro.mutants-caught"),
    ),
)
