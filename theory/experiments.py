"""Every experiment of the papers, and what rnn-verify did with it.

One :class:`Experiment` per figure, table or experiment paragraph of the papers in
:mod:`theory.papers`: **reproduced** (the claims or sweeps that reproduce it, the paper's numbers beside
ours, the committed report that holds ours), **partly reproduced**, **not reproduced** (with the
evidence), **not resolved at this power** (a comparison whose test could not tell at the sample
size run), or **not run** (the command that would run it and its cost, or -- where the toolkit has
no way to run it, e.g. a proprietary data set -- what it would take). Nothing is silently missing:
``tests/test_experiments.py`` checks that every claim and sweep named exists, that every committed
report named holds the claims with the verdicts the status implies, and that every number in
``ours`` occurs in that report's ``results.json``.

The table is rendered by :mod:`verify.report.experiments` into the README, every theory-check
report and the documentation (``python -m verify.report.experiments`` prints it).
"""

from __future__ import annotations

from dataclasses import dataclass

from theory.papers import COOIJMANS_MARTENS, FPP, KFRTRL, MARSCHALL, MILLER_HARDT, OK, RTRL_CONVERGENCE, SNAP, UORO

__all__ = ["EXPERIMENTS", "STATUSES", "Experiment"]

#: the statuses an experiment can have, in the order the table explains them
STATUSES = ("reproduced", "partly reproduced", "not reproduced", "not resolved at this power", "not run")


@dataclass(frozen=True)
class Experiment:
    """One experiment of one paper and its status in rnn-verify.

    ``paper`` is the key of :data:`theory.papers.PAPERS`; ``where`` the figure/section;
    ``what`` the experiment in a few words; ``paper_result`` what the paper reports (its
    numbers); ``status`` one of :data:`STATUSES`; ``ours`` our outcome with numbers (each
    number found in ``evidence``'s ``results.json``); ``claims`` the catalog claims that
    judge it; ``results`` the ids of results judged by a sweep's own merge (not catalog
    claims) in ``evidence``; ``evidence`` the committed report folder (relative to the
    repository root) holding ``ours``; ``command`` the command that (re)runs it, ``cost`` its
    measured or estimated cost; ``needs`` for an experiment with no command: what running it
    would take.
    """

    paper: str
    where: str
    what: str
    paper_result: str
    status: str
    ours: str = ""
    claims: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    evidence: str = ""
    command: str = ""
    cost: str = ""
    needs: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} of {self.paper} {self.where}: must be one of {STATUSES}")
        if self.status == "not run" and not (self.command or self.needs):
            raise ValueError(f"{self.paper} {self.where} is not run: give the command (and cost) or what it needs")
        if self.status != "not run" and not (self.ours and (self.claims or self.results or self.evidence)):
            raise ValueError(f"{self.paper} {self.where} is {self.status}: give our numbers and their evidence")


_F, _U, _C, _R, _M = FPP.key, UORO.key, COOIJMANS_MARTENS.key, RTRL_CONVERGENCE.key, MILLER_HARDT.key

EXPERIMENTS: tuple[Experiment, ...] = (
    # ------------------------------------------------------------------ FPP
    Experiment(
        _F,
        "§5, Fig. 2",
        "CycleWorld, p in {4, 6, 8, 10}, T in {p/2, p}: FPP vs T-BPTT, 30 runs x 5000 steps; the paper's measure "
        "(cross-entropy on one-hot observations, error-rate ratio) and the squared-error variant",
        "FPP more robust to T; T-BPTT at T = p/2 performs poorly (no numbers printed)",
        "not reproduced",
        ours="paper's measure at T = p/2: p = 4 FPP 0.038 vs T-BPTT 0.044 (no gap, power 1.00), p = 6, 8, 10 not "
        "resolved (power 0.37, 0.41, 0.53 for a gap of 0.1); squared error: p = 10 FPP 0.831 vs T-BPTT 0.724 "
        "(T-BPTT significantly better), p = 4 and 8 no gap at power 1.00 and 0.87",
        claims=("fpp.cycleworld-reproduction", "fpp.cycleworld-accuracy-reproduction"),
        evidence="reports/cycleworld-paper",
        command="rnn-verify sweep fpp-fig2 --scale paper",
        cost="11 min on one core",
    ),
    Experiment(
        _F,
        "§5, Fig. 3(a)",
        "CycleWorld across T: FPP, T-BPTT, No-Overlap T-BPTT",
        "FPP better than both for every T except T = 1",
        "not run",
        needs="a sweep over T at fixed p (the fpp-fig2 cells with other T); not defined",
    ),
    Experiment(
        _F,
        "§5, Fig. 3(b); App. D Table 1",
        "Stochastic World, T in {10, 15, 20, 30, 40}, three methods, cross-entropy, 30 runs x 10000 steps",
        "FPP better than both T-BPTTs at T in {10, 15, 20, 30}; optimum about 0.46 reached at T >= 20",
        "partly reproduced",
        ours="FPP below both T-BPTTs at T = 15 and 20 (0.618 vs 0.632 at T = 20), not significantly at T = 10 "
        "(0.654 vs 0.656) and T = 30 (0.619 vs 0.627, p = 0.027 before Holm); final CE 0.596 at T = 20, the optimum "
        "0.4545 not reached; controls FAIL (0.664, 0.767)",
        claims=("fpp.stochasticworld-reproduction",),
        evidence="reports/stochasticworld-paper",
        command="rnn-verify sweep fpp-fig3b --scale paper",
        cost="13 min on one core",
    ),
    Experiment(
        _F,
        "§5, Fig. 3(c)",
        "Sequential MNIST, 512 units, rows as inputs, 10000 images",
        "FPP better than both T-BPTTs for T in {7, 14, 21, 28}",
        "not run",
        needs="the MNIST data set (not shipped) and a 512-unit run per (method, T): about 10 CPU-hours per run",
    ),
    Experiment(
        _F,
        "§5, Fig. 3(d)",
        "Penn Tree Bank, LSTM with 200 units, 10000 words",
        "FPP better than both T-BPTTs for T in {1, 5, 10, 20}",
        "not run",
        needs="the Penn Tree Bank data set (not shipped) and an LSTM learner for FPP",
    ),
    Experiment(
        _F,
        "§5, Fig. 4",
        "M updates per step (B = 1) and mini-batches B (M = 1), FPP with and without state update, T up to 32",
        "FPP profits more than FPP without state update (largest gaps T = 16, 32 on Stochastic World)",
        "not run",
        ours="a reduced grid only (CycleWorld, T = 1, M or B = 8, 10 runs x 5000 steps): premise not met, FPP 0.913 "
        "vs FPP without state update 0.839",
        claims=("fpp.updates-reproduction",),
        evidence="reports/latest",
        command="rnn-verify sweep fpp-fig4 --scale paper --split-lrs --executor dask=ADDRESS",
        cost="30-100 CPU core-hours, estimated from pilot blocks",
    ),
    Experiment(
        _F,
        "App. C, Fig. 5",
        "sensitivity to buffer size N in {100, 1000, 10000} and T in {1, 5, 10, 15, 50}",
        "FPP robust to N and T (except very small T)",
        "not run",
        needs="a sweep over (N, T) of the FPP learner; not defined",
    ),
    Experiment(
        _F,
        "App. C, Fig. 6",
        "sensitivity to lambda for several T",
        "higher lambda better for small T",
        "not run",
        needs="a sweep over lambda of the FPP learner; not defined",
    ),
    Experiment(
        _F,
        "App. D, Fig. 7",
        "CycleWorld, T = 1, B = 16, 50000 steps, M in {1, 2, 4, 8, 16}, 30 runs",
        "FPP error goes to 0 with more updates; FPP without state update does not",
        "not run",
        ours="a reduced run only (M in {1, 16}, 4 runs x 3000 steps, one learning rate): premise not met -- FPP at "
        "M = 16 2.533 (worse than predicting 0) vs FPP without state update 0.901; the zeroed-gradient control FAILs",
        results=("fpp.updates-reproduction",),
        evidence="reports/fpp-fig7-reduced",
        command="rnn-verify sweep fpp-fig7 --scale paper --split-lrs --executor dask=ADDRESS",
        cost="about 40 CPU core-hours, estimated from pilot blocks",
    ),
    # ------------------------------------------------------------------ UORO
    Experiment(
        _U,
        "§4, eq. (8)-(9), Fig. 1",
        "influence balancing: the sign of truncated BPTT's derivative",
        "truncated BPTT has the wrong sign for short truncations",
        "reproduced",
        ours="n = 23, p = 10: RTRL -6, exact -6; truncated BPTT has the wrong sign for k < 41",
        claims=("rtrl.influence-balancing",),
        evidence="reports/latest",
    ),
    Experiment(
        _U,
        "§4, Fig. 3(a)",
        "influence balancing learned online, 23 units, 13 minus, SGD with eta/(1 + sqrt t)",
        "UORO converges, truncated BPTT diverges",
        "reproduced",
        ours="30 runs x 50000 steps: UORO's median loss over the last fifth 1.67e-06 (from 0.5); TBPTT(10) 1.35 "
        "-> 29.3 in 5000 steps, theta moving away from the optimum; frozen and sign-flipped UORO controls FAIL",
        claims=("uoro.influence-balancing-learning",),
        evidence="reports/latest",
    ),
    Experiment(
        _U,
        "§4, Fig. 3(b)",
        "distant brackets (1, 5, 5, 10), 64 GRU/LSTM units, Adam, UORO vs TBPTT",
        "UORO learns (slower than TBPTT early); entropy rate (s+k) log2(a)/(2s+k+5)",
        "partly reproduced",
        ours="reduced run (16 units, 5000 characters): final bpc GRU UORO 2.223, TBPTT-4 2.028; LSTM UORO 2.859, "
        "TBPTT-4 2.091; shuffled-stream controls 3.549-3.566 against the unigram 3.552 (they FAIL); entropy rate 1.661",
        evidence="reports/uoro-brackets-ci",
        command="rnn-verify sweep uoro-brackets --scale paper",
        cost="about 25 CPU core-hours (64 units, 10^7 characters, 8 runs)",
    ),
    Experiment(
        _U,
        "§4, Fig. 4-5",
        "a^n b^n (1, 32), 64 GRU/LSTM units, UORO vs TBPTT-16 and TBPTT-2",
        "UORO reaches the entropy rate 0.14 bpc after about 3x TBPTT-16's characters; Fig. 5: UORO LSTM 0.142, GRU "
        "0.151, TBPTT-16 LSTM 0.143, GRU 0.204",
        "partly reproduced",
        ours="reduced run (16 units, 5000 characters): final bpc GRU UORO 0.423, TBPTT-16 0.761; LSTM UORO 0.514, "
        "TBPTT-16 0.829; controls 1.288 against the unigram 1.259; the printed entropy-rate formula is undefined at "
        "(1, 32) (log2(k - l + 1)), the true rate is 0.143 (a finding)",
        evidence="reports/uoro-anbn-ci",
        command="rnn-verify sweep uoro-anbn --scale paper",
        cost="about 33 CPU core-hours (64 units, 10^7 characters, 12 runs)",
    ),
    Experiment(
        _U,
        "§4, Fig. 2",
        "synthetic text samples",
        "samples of the two data sets",
        "not run",
        needs="nothing to reproduce: an illustration of the data sets",
    ),
    # ------------------------------------------------------------------ Cooijmans & Martens
    Experiment(
        _C,
        "'Variance reduction through iterative rescaling', 'Theoretical framework'",
        "UORO's variance against t and the state size",
        "the variance is dominated by products of traces over the past steps",
        "reproduced",
        ours="relative variance at T = 20: n = 2 0.474, n = 32 8.31; exponent in n 1.06",
        claims=("uoro.variance-growth",),
        evidence="reports/latest",
    ),
    Experiment(
        _C,
        "'Toward improved variance reduction'",
        "optimal alpha_t and Q_0 = B^(-1/4) against UORO's greedy rescaling, B known by backprop",
        "significant variance reduction (no numbers); V(Q) from tr(B) tr(I) to tr(B^(1/2))^2",
        "reproduced",
        ours="Elman-tanh n = 6, T = 16: variance 98.05 (UORO) and 95.3 (greedy) against 47.46 (optimal; exact "
        "47.62); predicted levels 110.8 to 54.77",
        claims=("uoro.variance-reduction-optimal",),
        evidence="reports/latest",
    ),
    # ------------------------------------------------------------------ RTRL convergence
    Experiment(
        _R,
        "§7.1, Fig. 1-2",
        "linear RNN as a discretised SDE, RTRL vs TBPTT, RMSprop, learning-rate schedules, data s.d. x1 and larger",
        "RTRL typically better; TBPTT unstable for some learning rates and truncations; with larger data s.d. RTRL "
        "reaches a much smaller loss",
        "not reproduced",
        ours="reduced grid (n = 4, 2000 steps, 5 seeds): RTRL lower on 1 of 5 seeds at s.d. 1 (median log loss ratio "
        "-0.021) and at s.d. 3 (-0.562); TBPTT never unstable -- RTRL diverged instead",
        results=("rtrl.sec71-linear-sd1", "rtrl.sec71-linear-sd3", "rtrl.sec71-tbptt-unstable"),
        evidence="reports/rtrl-sec71-reduced",
        command="rnn-verify sweep rtrl-sec71 --scale paper",
        cost="1680 cells, about 5-8 CPU core-hours (estimated from the reduced run)",
    ),
    Experiment(
        _R,
        "§7.1 (the convergence theorem on its linear example)",
        "online RTRL on the linear RNN reaches a stationary point of the long-run loss",
        "the convergence theorem's conclusion",
        "reproduced",
        ours="2000 online steps (linear, seed 0): loss 0.0062 vs teacher 0.0050",
        claims=("rtrl.online-convergence",),
        evidence="reports/latest",
    ),
    Experiment(
        _R,
        "§7.2, Fig. 3-8",
        "single-layer Elman RNNs (ReLU; tanh with two teachers), RTRL vs TBPTT, RMSprop, learning-rate schedules",
        "RTRL better than TBPTT for each activation",
        "not resolved at this power",
        ours="reduced grid (n = 4, 2000 steps, 5 seeds): seeds favouring RTRL vs TBPTT 1 vs 3 (ReLU), 2 vs 0 (tanh), "
        "2 vs 2 (tanh, second teacher); median log loss ratios +0.000, +0.003, -0.002",
        results=("rtrl.sec72-elman-relu", "rtrl.sec72-elman-tanh", "rtrl.sec72-elman-tanh-b"),
        evidence="reports/rtrl-sec72-reduced",
        command="rnn-verify sweep rtrl-sec72 --scale paper",
        cost="2520 cells, about 13-17 CPU core-hours (estimated from the reduced run)",
    ),
    Experiment(
        _R,
        "§7.3, Fig. 9",
        "neural ODE with a Wishart matrix, RTRL vs TBPTT",
        "RTRL better",
        "not run",
        needs="a neural-ODE model; the printed constants are lost from the text",
    ),
    Experiment(
        _R,
        "§7.4, Fig. 10",
        "next character of 1 million characters of Shakespeare; GRU, Elman tanh and ELU, 10-50 units",
        "RTRL not consistently better",
        "not run",
        needs="the text (not shipped) and RTRL at 50 units: O(n^4) per step, about 100 CPU-hours per run",
    ),
    Experiment(
        _R,
        "§7.5, Fig. 11",
        "Amazon order-book events (180 million), Elman RNN, three-class cross-entropy",
        "RTRL vs TBPTT training curves",
        "not run",
        needs="proprietary order-book data; cannot be reproduced from the paper",
    ),
    # ------------------------------------------------------------------ Miller & Hardt
    Experiment(
        _M,
        "§7.1, Fig. 1(a)",
        "gradient error of truncation against k, linear and tanh",
        "the error follows k lambda^k (Lemma 2)",
        "reproduced",
        ours="linear: fitted slope -0.334 vs log lambda -0.288",
        claims=("truncation.figure-1a",),
        evidence="reports/latest",
    ),
    Experiment(
        _M,
        "§7.1, Fig. 1(b)",
        "parameter error of truncated training with alpha/t steps",
        "the error scales like Prop. 2's bound",
        "reproduced",
        ours="10 runs, N = 200, k = 35: Lemma 2 and Lemma 3 hold along every trajectory",
        claims=("truncation.training-prop2",),
        evidence="reports/latest",
    ),
    Experiment(
        _M,
        "§7.2",
        "stable (||W|| <= 1) vs unconstrained tanh RNN on Wikitext-2",
        "test perplexity 143.5 (stable) vs 146.7",
        "not run",
        needs="the Wikitext-2 data set (not shipped) and about 16 word-level language models (roughly 8-16 GPU-hours, "
        "estimated); a synthetic analogue of the three measurements, labelled as such: python -m "
        "verify.bench.mh_sec72_analogue (8 s)",
    ),
    Experiment(
        _M,
        "§7.2, Fig. 2",
        "gradient norm with respect to inputs against distance, RNN and LSTM on Wikitext-2",
        "the gradient vanishes for moderate distances",
        "not run",
        needs="the Wikitext-2 data set (not shipped) and trained language models",
    ),
    Experiment(
        _M,
        "§7.2, Fig. 3",
        "distance between truncated (k <= 64) and k = 65 models during training on Wikitext-2",
        "||W_k - W_65|| grows slowly, less for larger k",
        "not run",
        needs="the Wikitext-2 data set (not shipped) and one training run per k (GPU-hours)",
    ),
    # ------------------------------------------------------------------ SnAp (issue 26, WIP)
    Experiment(
        SNAP.key,
        "§5, Fig. 2-4",
        "character-level language modelling (enwik8) and the Copy task with sparse GRU/LSTM trained by SnAp-1/2, "
        "RTRL, UORO and truncated BPTT",
        "SnAp-2 close to BPTT at a fraction of RTRL's cost; SnAp-1 degrades on the Copy task's longer sequences",
        "not run",
        needs="enwik8 (not shipped), a truly sparse SnAp (this one stores the influence dense) and training "
        "runs at the paper's scale (GPU-hours); rtrl.snap-exactness checks SnAp's definition, not these runs",
    ),
    # ------------------------------------------------------------------ RFLO, e-prop (issue 26)
    Experiment(
        "Murray 2019",
        "Fig. 2",
        "periodic output task: an RNN of N = 30 leaky units with no input trained by RFLO and by BPTT to produce a "
        "one-dimensional periodic output (periods 20 to 160 time constants); feedback/readout alignment; RFLO "
        "with locality only or random feedback only",
        "RFLO learns the task, with a loss that grows with the period faster than BPTT's; the readout weights "
        "align with the random feedback B during training",
        "not run",
        needs="a training loop for RFLO with random feedback on the periodic task (nine realizations per period, "
        "five periods, two rules; CPU-minutes to an hour, estimated); rtrl.rflo-limits checks RFLO's definition "
        "against RTRL at frozen parameters, not these training runs",
    ),
    Experiment(
        "Bellec et al. 2020",
        "Results (figure numbers not checked)",
        "supervised e-prop on recurrent networks of spiking (LIF and adaptive LIF) neurons -- TIMIT framewise "
        "phoneme recognition, an evidence-accumulation task -- and reward-based e-prop",
        "e-prop approaches the performance of BPTT on these tasks",
        "not run",
        needs="spiking neuron models (LIF with adaptation and a pseudo-derivative; the toolkit has rate units "
        "only), the TIMIT corpus (licensed, not shipped) and training runs (GPU-hours); rtrl.eprop-limits checks "
        "e-prop's definition for rate units against RTRL, not these runs",
    ),
    # ------------------------------------------------------------------ Marschall et al. 2020 (issue 26)
    Experiment(
        MARSCHALL.key,
        "experiments (the gradient-alignment comparisons)",
        "online algorithms (RTRL, UORO, KF-RTRL, RFLO, e-prop and others) trained on two synthetic task families; "
        "the alignment of each algorithm's gradient with the exact one and with each other",
        "performances cluster by the paper's criteria; pairwise gradient alignment shows a similar clustering, but "
        "alignment with exact methods does not explain final performance (abstract)",
        "not run",
        needs="the paper's synthetic tasks and one training run per algorithm; rtrl.bias-alignment measures the "
        "alignment (and normalized bias) at frozen parameters on random sparse Elman problems, not along training",
    ),
    # ------------------------------------------------------------------ OK (issue 26)
    Experiment(
        OK.key,
        "experiments (section and figure numbers not checked)",
        "character-level Penn TreeBank with an RNN trained online by OK",
        "OK matches truncated BPTT (abstract)",
        "not run",
        needs="the Penn TreeBank data set (not shipped) and training runs at the paper's scale (GPU-hours)",
    ),
    Experiment(
        OK.key,
        "experiments (section and figure numbers not checked)",
        "synthetic string memorization task with online parameter updates",
        "OK outperforms truncated BPTT (abstract)",
        "not run",
        needs="the task's generator and training runs at the paper's scale; OK here is checked for its definition "
        "(tests/estimators/test_ok.py: exact mean = RTRL, the reduction's variance = the theorem's minimum)",
    ),
    Experiment(
        OK.key,
        "experiments (section and figure numbers not checked)",
        "noise of OK's gradient estimates against the previous approximations of RTRL",
        "OK's noise is empirically negligible, unlike previous algorithms' (abstract)",
        "not run",
        needs="the paper's networks and training runs; uoro.ok-variance judges OK's variance on small Elman "
        "problems instead (per step exactly: eq. (2)'s minimum, never above KF-RTRL's; along trajectories OK(1) "
        "against KF-RTRL and OK(2) against OK(1) at several n, with CIs, and OK(1)'s noise-to-signal ratio, "
        "reported as a FINDING where it is not negligible)",
    ),
    # ------------------------------------------------------------------ KF-RTRL (issue 26)
    Experiment(
        KFRTRL.key,
        "§5: copy task",
        "synthetic string memorization (copy task) with Recurrent Highway Networks trained online by KF-RTRL, "
        "UORO and truncated BPTT; longest sequence length learned",
        "KF-RTRL captures long-term dependencies: it learns longer sequences than UORO (abstract; numbers not "
        "restated here)",
        "not run",
        needs="KF-RTRL for Recurrent Highway Networks (one Kronecker factor per layer; this one covers Elman cells "
        "only), the copy-task curriculum and training runs at the paper's scale; "
        "uoro.kfrtrl-unbiased and uoro.kfrtrl-variance check KF-RTRL's estimator, not these runs",
        cost="GPU-hours (estimated from KF-RTRL's O(n^3) operations per step; not measured)",
    ),
    Experiment(
        KFRTRL.key,
        "§5: Penn TreeBank",
        "character-level language modelling on Penn TreeBank with an RHN trained by KF-RTRL, UORO and truncated "
        "BPTT; validation bits per character",
        "KF-RTRL almost matches truncated BPTT; UORO is clearly worse (abstract; numbers not restated here)",
        "not run",
        needs="the Penn TreeBank data set (not shipped), KF-RTRL for RHNs and training runs at the paper's scale",
        cost="GPU-days (estimated from KF-RTRL's O(n^3) operations per step over a corpus of ~5e6 characters; not "
        "measured)",
    ),
)
