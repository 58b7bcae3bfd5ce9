r"""Independent check of the start-term finding on omarschall/vanilla-rtrl (UORO, KF_RTRL, Reverse_KF_RTRL).

Drives the library's classes directly (no rnn-verify code), on a tiny tanh network (n = 2, d = 1, k = 1, T = 3),
with one fixed start (A_0, B_0) and every sign pattern of ν (2^(n T) or 2^(2 T) = 64 patterns): the exact
expectation of each step's recurrent gradient given the start. It compares it with exact RTRL written here
(M_t = J_t M_(t-1) + dF/dθ) and with RTRL plus the start term the derivation predicts -- given the past, each
update's expectation is the RTRL recursion applied to the previous factors (E[ν]=0, E[ν ν^T]=I, the ρ's do not
depend on the ±1 signs), so E[g_t | start] = q_t M_t + q_t (J_t...J_1 applied to the start's Kronecker/outer
product):

* UORO:            start term (q_t^T J_t...J_1 A_0) B_0
* KF_RTRL:         start term (q_t^T J_t...J_1 B_0)_i (A_0)_j
* Reverse_KF_RTRL: start term (A_0)_i (q_t^T J_t...J_1 B_0)_j

and that the start (-A_0, B_0), as likely as (A_0, B_0) under the library's standard-normal start, has the opposite
start term: the average of the two is RTRL to round-off (unbiased over the random start, biased given one).

    python reports/gallery-notes/vanilla_rtrl_start_term.py /path/to/vanilla-rtrl
"""

import itertools
import sys
import warnings

import numpy as np

sys.path.insert(0, sys.argv[1])
with warnings.catch_warnings(action="ignore"):
    from core import RNN
    from functions import identity, mean_squared_error, tanh
    from learning_algorithms import KF_RTRL, UORO, Reverse_KF_RTRL

rng = np.random.default_rng(7)
n, d, k, T = 2, 1, 1, 3
W_in, W_rec, W_out = rng.normal(size=(n, d)), 0.9 * rng.normal(size=(n, n)), rng.normal(size=(k, n))
b_rec, b_out, a0 = rng.normal(size=n), rng.normal(size=k), 0.5 * rng.normal(size=n)
xs, ys = rng.normal(size=(T, d)), rng.normal(size=(T, k))
m = n + d + 1


def run(cls, start, signs):
    """The library's recurrent gradient (n, m) at each step, ν from ``signs`` (one row per step)."""
    rnn = RNN(W_in, W_rec, W_out, b_rec, b_out, activation=tanh, alpha=1, output=identity, loss=mean_squared_error)
    rnn.reset_network(h=np.zeros(n), a=a0.copy())
    alg = cls(rnn, A=start[0].copy(), B=start[1].copy())
    rows = iter(signs)
    alg.sample_nu = lambda: next(rows)
    out = []
    for x, y in zip(xs, ys, strict=True):
        rnn.next_state(x)
        rnn.z_out()
        rnn.error = rnn.loss.f_prime(rnn.z, y)
        alg.update_learning_vars()
        alg()
        out.append(alg.rec_grads.copy())
    return np.array(out)


def reference():
    """Exact RTRL (own code): per-step q_t M_t as (n, m), the Jacobians' products P_t = J_t...J_1 and q_t."""
    a, M, P, g, Ps, qs = a0.copy(), np.zeros((n, n, m)), np.eye(n), [], [], []
    for x, y in zip(xs, ys, strict=True):
        ahat = np.concatenate([a, x, [1.0]])
        a = np.tanh(W_rec @ a + W_in @ x + b_rec)
        D = 1 - a**2
        J = D[:, None] * W_rec
        imm = np.zeros((n, n, m))
        imm[np.arange(n), np.arange(n), :] = D[:, None] * ahat[None, :]
        M, P = np.einsum("kl,lij->kij", J, M) + imm, J @ P
        q = (W_out @ a + b_out - y) @ W_out
        g.append(np.einsum("k,kij->ij", q, M))
        Ps.append(P.copy())
        qs.append(q)
    return np.array(g), Ps, qs


g, Ps, qs = reference()
start_terms = {
    "UORO": lambda A, B, P, q: (q @ P @ A) * B,
    "KF_RTRL": lambda A, B, P, q: np.outer(q @ P @ B, A),
    "Reverse_KF_RTRL": lambda A, B, P, q: np.outer(A, q @ P @ B),
}
for cls, n_nu, shapes in ((UORO, n, (n, (n, m))), (KF_RTRL, 2, (m, (n, n))), (Reverse_KF_RTRL, n, (n, (n, m)))):
    name = cls.__name__
    start = (rng.normal(size=shapes[0]), rng.normal(size=shapes[1]))
    patterns = list(itertools.product((-1.0, 1.0), repeat=n_nu * T))

    def mean(st, cls=cls, n_nu=n_nu, patterns=patterns):
        return np.mean([run(cls, st, np.reshape(p, (T, n_nu))) for p in patterns], axis=0)

    Eg, Eg_flip = mean(start), mean((-start[0], start[1]))
    term = np.array([start_terms[name](*start, P, q) for P, q in zip(Ps, qs, strict=True)])
    rel = lambda a: float(np.linalg.norm(a) / np.linalg.norm(g))  # noqa: E731
    print(
        f"{name}: given one start ||E g - g_RTRL||/||g_RTRL|| = {rel(Eg - g):.3g}; minus the predicted start term: "
        f"{rel(Eg - g - term):.2e}; average over the starts (A0, B0) and (-A0, B0): {rel((Eg + Eg_flip) / 2 - g):.2e}"
    )
