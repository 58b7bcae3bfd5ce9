"""Claims of the ``truncation`` family: Miller & Hardt, "When recurrent models don't need to be recurrent".

Bounds are derived in :mod:`theory.truncation` from the proofs' own terms and
instantiated in :mod:`theory.instances`; the checks live in :mod:`verify.checks.truncation` and
:mod:`verify.checks.truncation_stability` (computing in :mod:`verify.truncation`). Every bound check first runs
the assumption checker (:mod:`verify.oracles.contraction`) and refuses a non-contractive instance.
"""

from __future__ import annotations

from theory.catalog import Claim
from theory.gate import planned_alpha
from theory.rates import Rate

#: family-wise false-FAIL rate of ``truncation.rate``'s fits (split over them by Bonferroni): its share of the ci
#: gate's budget (:mod:`theory.gate`; ``truncation.figure-1a`` states its own)
RATE_ALPHA = planned_alpha("truncation.rate")

PAPER = "Miller & Hardt 2018"

_CONTRACTIVE = (
    "lambda-contractive transition (eq. (2)): certified by verify.oracles.contraction as L_rho ||W||_2 < 1 "
    "(refused with AssumptionViolated otherwise)",
    "phi_w(0, 0) = 0 and h_0 = 0 (no bias, zero initial state): checked",
    "||x_t|| <= B_x: B_x is measured as max_t ||x_t||",
)
_SMOOTH = (
    *_CONTRACTIVE,
    "smooth transition (tanh or linear; relu refused); loss p_T = 1/2||V h_T + c - y_T||^2 with "
    "L_p = ||V||(||V|| B_h + ||c - y_T||), beta_p = ||V||^2 on the reachable set ||h|| <= B_h",
    "w = (W, U); the readout is not trained (the paper's prediction function is not parameterized)",
)
_ERRATA_L2 = (
    "Lemma 2 is stated with '=' but the proof shows '<='.",
    "Proof of Lemma 2, step (c): beta_hh ||h_{T-1} - h_{T-1}|| must read beta_hh ||h_{T-1} - h^k_{T-1}||.",
    "Proof of Lemma 2, (b) and (c): dh_t/dw is taken at h_{t-1}, so each of the k window terms is lambda^(k-1), "
    "not lambda^k; the printed k lambda^k parts are exceeded (by 3.2x at lambda = 0.3) on the scalar system "
    "h_t = lambda h_{t-1} + 10, which the corrected bound matches to within 0.1%. gamma gains a factor 1/lambda "
    "on the (b), (c) parts.",
    "§6.2 says tanh is 1-smooth, App. A.3.1 2-smooth; sup|tanh''| = 4 sqrt(3)/9 (sympy), used here.",
)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="truncation.state-bound",
        title="Lemma 1: truncated-model states are within lambda^k L_x B_x/(1-lambda)",
        paper=PAPER,
        where="Lemma 1, App. A.1; eq. (3)",
        statement="For a lambda-contractive system, Lipschitz in x with inputs bounded by B_x, the state of the "
        "truncated model (restarted from 0 k steps back) is within lambda^k L_x B_x/(1-lambda) of the full "
        "model's state, at every t.",
        math="||h_t - h^k_t|| <= lambda^k L_x B_x / (1 - lambda),  h^k_t = phi_w(h^k_{t-1}, x_t), h^k_{t-k} = 0",
        assumptions=_CONTRACTIVE,
        check="verify.checks.truncation.check_state_bound",
        errata=(
            "Lemma 1 is stated as 'k >= O(log(...)) implies <= eps'; the proof gives the explicit bound checked here.",
        ),
    ),
    Claim(
        id="truncation.gradient-bound",
        title="Lemma 2: the truncated model's gradient is within gamma k lambda^k",
        paper=PAPER,
        where="Lemma 2, App. A.2.1",
        statement="The gradient of the loss at step T of the truncated model differs from the full model's by at "
        "most the sum of the proof's four terms (long-term part, (a), (b), (c)), hence by gamma k lambda^k with "
        "gamma = O(B_x (1-lambda)^-2) derived from the proof's constants.",
        math="||grad_w p_T - grad_w p^k_T|| <= lambda^k L_p L_w/(1-l) + lambda^k beta_p L_w L_x B_x/(1-l)^2 "
        "+ k lambda^(k-1) L_p beta_wh L_x B_x/(1-l) + k lambda^(k-1) L_p L_w beta_hh L_x B_x/(1-l)^2 "
        "<= gamma k lambda^k  (l = lambda)",
        assumptions=_SMOOTH,
        check="verify.checks.truncation.check_gradient_bound",
        errata=_ERRATA_L2,
    ),
    Claim(
        id="truncation.tbptt-gradient-bound",
        title="Lemma 2 for truncated BPTT: the dropped long-term part is at most lambda^k L_p L_w/(1-lambda)",
        paper=PAPER,
        where="Lemma 2 (first term of its proof), App. A.2.1",
        statement="Truncated BPTT on the full model (exact forward states, the last k transitions differentiated) "
        "drops only the long-term components of the gradient, whose norm is at most lambda^k L_p L_w/(1-lambda) "
        "<= gamma k lambda^k.",
        math="||grad_w p_T - g^k_T|| <= lambda^k L_p L_w / (1 - lambda)",
        assumptions=_SMOOTH,
        check="verify.checks.truncation.check_tbptt_gradient_bound",
    ),
    Claim(
        id="truncation.rate",
        title="the truncation error decays at least like k lambda^k",
        paper=PAPER,
        where="Lemma 2; §7.1, Fig. 1(a)",
        statement="The fitted slope of log(e_k / k) against k (points above 10x the round-off budget; Newey-West "
        "interval, since the residuals of a deterministic error curve are serially correlated) reaches log lambda "
        "or lies below it, for the truncated model and for truncated BPTT on every instance. The many fits are "
        f"decided with one-sided bounds at the Bonferroni level alpha/m (family-wise false-fail rate {RATE_ALPHA:g}); "
        "the "
        "unadjusted 99% intervals are reported; the slope is reported next to the instance's measured "
        "contraction rate.",
        math=f"slope of log(e_k/k) vs k:  lower confidence bound (level 1 - {RATE_ALPHA:g}/m) <= log(lambda)",
        assumptions=(
            *_SMOOTH,
            "at least 4 values of k above 10x the predicted round-off budget; a bound above log lambda counts "
            "only on a window where lambda^k falls by >= 2 decades (otherwise: not informative, reported)",
        ),
        check="verify.checks.truncation.check_rate",
        kind="rate",
        rate=Rate("k lambda^k (Lemma 2)", "k", "log(e_k / k)", None, "at-most"),
        alpha=planned_alpha("truncation.rate"),
        errata=(
            "Not a theorem per instance: e_k <= gamma k lambda^k allows a bounded prefactor that drifts upward over a "
            "finite window (the error scales with ||h_{T-k}||), so a fitted slope can exceed log lambda slightly; "
            "seen once in 400 unadjusted 99% intervals (lambda = 0.324, W = lambda x orthogonal, every k fitted), "
            "never beyond the multiplicity-adjusted bound.",
        ),
    ),
    Claim(
        id="truncation.training-prop2",
        title="Prop. 2: GD on the truncated and full models stays within alpha gamma k lambda^k N^(alpha beta+1)",
        paper=PAPER,
        where="Prop. 2, Lemma 3, App. A.2.2-A.2.3; §7.1, Fig. 1(b)",
        statement="After N steps of projected gradient descent with step sizes alpha/t from a common start, the "
        "weights of the full and truncated models differ by at most alpha gamma k lambda^k N^(alpha beta + 1) "
        "(beta from Lemma 3). With the sympy constants the bound holds but is astronomically vacuous; with the "
        "constants measured on the trajectory the proof's chain is checked at every step. Constant and "
        "alpha/sqrt(t) steps are reported against the same curve (§7.1's observation). Premise: Fig. 1(b)'s curves "
        "are curves -- the tanh model's mean tanh' is at least 0.5 and its delta_t rises above the float64 round-off "
        "allowance; App. A.5's tanh instance saturates tanh (input drive s.d. sqrt(2d) = 8, delta_t identically 0 at "
        "d = 32): it is run and reported as a finding, and the tanh curve judged is the same draws with U rescaled "
        "(input drive s.d. 0.5, W and lambda unchanged, contraction certified).",
        math="||w^N_recurr - w^N_trunc|| <= alpha gamma k lambda^k N^(alpha beta) sum_{i<=N} i^-(alpha beta+1) "
        "<= alpha gamma k lambda^k N^(alpha beta + 1)",
        assumptions=(
            *_SMOOTH,
            "Omega = {||W||_2 <= lambda} (U and readout fixed), projection by singular-value clipping; "
            "constants are taken on all of Omega",
        ),
        check="verify.checks.truncation_stability.check_training_prop2",
        kind="reproduction",
        errata=(
            "Lemma 3's proof: the intermediate line with beta_hh L_w ||w - w'||/(1-lambda)^2 (T-t) lambda^(T-t-1) "
            "has one (1-lambda) too many; the final (1-lambda)^-3 is right.",
            "Prop. 2's proof starts the recurrence at delta_0 with alpha_0 = alpha/0; the unwinding is right with "
            "steps i = 1..N.",
        ),
    ),
    Claim(
        id="truncation.unstable-counterexample",
        title="Prop. 3: without stability the truncation error is unbounded, and the bounds refuse the instance",
        paper=PAPER,
        where="Prop. 3, App. A.4",
        statement="For h_t = 2 h_{t-1} + x_t with x_1 = 1 and x_t = 0 afterwards, |y_t - y^k_t| = 2^(t-1) for "
        "t >= k + 1, for every k; the bound checks report the contraction premise violated (not PASS, not FAIL).",
        math="|y_t - y^k_t| = 2^(t-1) -> infinity (t -> infinity), any k",
        assumptions=("the system is deliberately NOT contractive (lambda = 2)",),
        check="verify.checks.truncation_stability.check_unstable_counterexample",
        errata=("App. A.4 uses x_0 = 1 with h_0 = 0; with t starting at 1 it is x_1 = 1 (h_t = 2^(t-1)).",),
    ),
    Claim(
        id="truncation.gd-divergence",
        title="Prop. 4: gradient descent outside the stable set diverges",
        paper=PAPER,
        where="Prop. 4, App. A.4, eq. (6)",
        statement="For h_t = a h_{t-1} + x_t with (x_t, y_t) = (1, 1) and the loss at step T, eq. (6) is the "
        "gradient, and gradient descent with steps 1/i from a^0 outside [-1, 1] diverges (|a^i| and the gradient "
        "grow without bound, with alternating sign); projected onto the stable set it converges to a = 0.",
        math="d/da 1/2(h_T - 1)^2 = ((1-a^T)/(1-a) - 1)((1-a^T)/(1-a)^2 - T a^(T-1)/(1-a));  |a^i| -> infinity",
        assumptions=("unconstrained a (outside the stable set)",),
        check="verify.checks.truncation_stability.check_gd_divergence",
        errata=(
            "App. A.4 writes h_t = sum_{i=0}^{t-1} a^t b; it is a^i b. The sequence length is called both L and T.",
            "The iterates do not go to +infinity: their sign alternates while |a^i| grows doubly exponentially.",
        ),
    ),
    Claim(
        id="truncation.assumption-checker",
        title="the contraction checker decides lambda < 1 and reports lambda",
        paper=PAPER,
        where="eq. (2); §6.1-6.3; Prop. 5, Lemma 5, App. A.3.2",
        statement="For linear systems and Elman RNNs the certificate is L_rho ||W||_2 (spectral norm); for the "
        "LSTM it is the l_inf factor of Prop. 5's proof on the reachable set, with the number of steps after "
        "which the iterated map is l2-contractive; other cells are refused. A certificate is valid when no "
        "observed expansion ratio exceeds the certified lambda.",
        math="||phi(h, x) - phi(h', x)|| <= L_rho ||W||_2 ||h - h'||;  LSTM: lambda_inf = (||W_i|| + ||c|| ||W_f|| "
        "+ ||W_o||)/4 + ||W_z|| + ||f|| (l_inf norms)",
        assumptions=("cell is linear, Elman (tanh/relu) or LSTM; anything else is refused",),
        check="verify.checks.truncation_stability.check_assumption_checker",
        errata=(
            "Prop. 5's statement implies the proof's condition (the latter is what is needed); with biases the gate "
            "bound of Lemma 5 is sigma(max_j [||W_f,j||_1 + max_t (U_f x_t + b_f)_j]).",
        ),
    ),
    Claim(
        id="truncation.figure-1a",
        title="Fig. 1(a): the gradient truncation error against k, linear and tanh",
        paper=PAPER,
        where="§7.1, Fig. 1(a), App. A.5",
        statement="On the random instances of App. A.5 (lambda = 0.75, n = d = 32, T = 200, 10 runs) the error "
        "||grad p_T - grad p^k_T|| decays like k lambda^k: every run lies below its explicit Lemma 2 bound and "
        "the fitted rate of the mean curve is consistent with lambda^k. Data for the figure (mean error, fitted "
        "c k lambda^k, mean explicit bound) are in the result. App. A.5's tanh instance saturates tanh (input "
        "drive s.d. sqrt(2d) = 8, mean tanh' ~0.1): its error falls to round-off within ~15 k, so the rate "
        "criterion holds vacuously; it is reported (a finding) and the judged tanh curve is the same draws with U "
        "rescaled to input drive s.d. 0.5 (mean tanh' ~0.77). Premise: the judged curves are curves (not "
        "saturated, >= 4 k above the round-off floor), else FAIL.",
        math="mean_runs ||grad_w p_T - grad_w p^k_T|| ~ c k lambda^k <= gamma k lambda^k",
        assumptions=(*_SMOOTH, "D x_T of the prediction f(h, x) = C h + D x is folded into the target"),
        check="verify.checks.truncation.check_figure_1a",
        kind="reproduction",
        alpha=planned_alpha("truncation.figure-1a"),
    ),
)
