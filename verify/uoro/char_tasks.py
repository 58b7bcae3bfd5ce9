r"""UORO §4's synthetic character-level datasets, their entropy rates and their Bayes predictors.

Tallec & Ollivier 2017, "Unbiased Online Recurrent Optimization", arXiv:1702.05043, §4
"Next-character prediction" (uoro-tallec-ollivier.md), with the generators of the authors'
code (github.com/ctallec/uoro, ``datasets/*/generate.lua``) for the details the text leaves out.

**Distant brackets (s, k_min, k_max, a)** (§4, Fig. 2a, Fig. 3b "(1, 5, 5, 10)"): each line
is ``[`` + s random letters + ``]`` + k random letters + ``[`` + the same s letters + ``]`` +
``\n``, with k uniform in ``k_min..k_max`` and letters uniform over an alphabet of a (the
paper's "(s, k, a)" has k_min = k_max = k; its Fig. 3b caption's four numbers are the code's
``save, min, max, alphabet``). With k fixed the line has 2s + k + 5 characters and carries
(s + k) log2 a bits, so

.. math:: H = \frac{(s+k)\log_2 a}{2s+k+5}\ \text{bits per character (§4, as printed)}.

For a random k the line also carries log2(k_max - k_min + 1) bits (where the second ``[``
falls) over a mean length of 2s + E[k] + 5; :func:`brackets_entropy_rate` gives the general
renewal rate (entropy per line / mean line length).

**aⁿbⁿ(k, l)** (§4, Fig. 2b, Fig. 4, 5 at (1, 32)): n uniform in k..l, then n ``a``, ``\n``,
n ``b``, ``\n``. A line carries log2(l - k + 1) bits over a mean length of k + l + 2, so

.. math:: H = \frac{\log_2(l-k+1)}{k+l+2} = \frac{5}{35} = 0.1429\ \text{bpc at } (1, 32).

FINDING (a misprint, not a wrong claim): the paper prints :math:`\log_2(k-l+1)/(k+l+2)`, a sign
typo -- k - l for l - k -- which for k < l is the log of a negative number; its stated 0.14 bpc at
(1, 32) is right, the value of the formula above (:data:`ANBN_PRINTED_FORMULA_NOTE`). A model
that predicts the a's optimally but does not count pays log2(l - k + 1) bits again for the b's:
10/35 = 0.2857 bpc, the paper's "double, 0.28 bpc".

The Bayes predictors (:func:`brackets_bayes_probs`, :func:`anbn_bayes_probs`) give the true
conditional law of each next character given the past; the mean of -log2 of the probability
they give the actual next character over a long sample is an empirical estimate of the entropy
rate that is independent of the formulas (the tests compare the two). The "memoryless" levels
are those of predictors that do everything right except the long dependency:
:func:`brackets_memoryless_rate` (the repeated letters guessed uniformly: the LSTM TBPTT-4
"memoryless optimum" of §4) and :func:`anbn_no_count_rate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verify.errors import InvalidArgument

__all__ = [
    "ANBN_PRINTED_FORMULA_NOTE",
    "AnBn",
    "CharTask",
    "DistantBrackets",
    "anbn_bayes_probs",
    "anbn_no_count_rate",
    "bayes_log_loss_bits",
    "brackets_bayes_probs",
    "brackets_entropy_rate",
    "brackets_memoryless_rate",
    "make_task",
    "unigram_entropy",
]

ANBN_PRINTED_FORMULA_NOTE = (
    "UORO §4's a^n b^n(k, l) entropy rate is printed with a sign typo: log2(k-l+1)/(k+l+2) for log2(l-k+1)/(k+l+2) "
    "(n uniform on the l-k+1 values k..l, mean line length k+l+2); as printed it is the log of a negative number at "
    "the paper's (1, 32). The rate the paper states is right: 5/35 = 0.1429 bpc at (1, 32), its '0.14 bpc' -- a "
    "misprinted formula, not a wrong claim."
)


def _int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise InvalidArgument(name, value, f"must be an integer >= {minimum}")
    return int(value)


@dataclass(frozen=True)
class DistantBrackets:
    """Distant brackets (s, k_min, k_max, a) of UORO §4 (see the module docstring). Symbols: 0..a-1 letters,
    a = ``[``, a+1 = ``]``, a+2 = newline."""

    s: int = 1
    k_min: int = 5
    k_max: int = 5
    a: int = 10
    name: str = "brackets"

    def __post_init__(self) -> None:
        _int("s", self.s, 1)
        _int("k_min", self.k_min, 0)
        _int("k_max", self.k_max, 0)
        _int("a", self.a, 2)
        if self.k_max < self.k_min:
            raise InvalidArgument("k_max", self.k_max, f"must be >= k_min = {self.k_min}")

    @property
    def vocab(self) -> int:
        return self.a + 3

    def symbols(self) -> str:
        return "".join(chr(ord("a") + i) for i in range(self.a)) + "[]\n"

    def entropy_rate(self) -> float:
        return brackets_entropy_rate(self.s, self.k_min, self.k_max, self.a)

    def memoryless_rate(self) -> float:
        return brackets_memoryless_rate(self.s, self.k_min, self.k_max, self.a)

    def sample(self, length: int, rng: np.random.Generator) -> np.ndarray:
        """The first ``length`` symbols of a stream of whole lines (int64)."""
        length = _int("length", length, 1)
        a, s = self.a, self.s
        out: list[int] = []
        while len(out) < length:
            saved = rng.integers(0, a, size=s).tolist()
            k = int(rng.integers(self.k_min, self.k_max + 1))
            out += [a, *saved, a + 1, *rng.integers(0, a, size=k).tolist(), a, *saved, a + 1, a + 2]
        return np.asarray(out[:length], dtype=np.int64)

    def bayes_probs(self, seq: np.ndarray) -> np.ndarray:
        return brackets_bayes_probs(self, seq)

    def describe(self) -> str:
        return f"distant brackets (s={self.s}, k={self.k_min}..{self.k_max}, a={self.a})"


@dataclass(frozen=True)
class AnBn:
    """aⁿbⁿ(k, l) of UORO §4 (see the module docstring). Symbols: 0 = ``a``, 1 = ``b``, 2 = newline."""

    k: int = 1
    l: int = 32
    name: str = "anbn"

    def __post_init__(self) -> None:
        _int("k", self.k, 1)
        _int("l", self.l, 1)
        if self.l < self.k:
            raise InvalidArgument("l", self.l, f"must be >= k = {self.k}")

    @property
    def vocab(self) -> int:
        return 3

    def symbols(self) -> str:
        return "ab\n"

    def entropy_rate(self) -> float:
        return math.log2(self.l - self.k + 1) / (self.k + self.l + 2)  # corrected §4 formula (l - k + 1)

    def printed_entropy_rate(self) -> float | None:
        """The formula as printed, log2(k-l+1)/(k+l+2); None where it is undefined (k - l + 1 <= 0)."""
        m = self.k - self.l + 1
        return math.log2(m) / (self.k + self.l + 2) if m > 0 else None

    def memoryless_rate(self) -> float:
        return anbn_no_count_rate(self.k, self.l)

    def sample(self, length: int, rng: np.random.Generator) -> np.ndarray:
        length = _int("length", length, 1)
        out: list[int] = []
        while len(out) < length:
            n = int(rng.integers(self.k, self.l + 1))
            out += [0] * n + [2] + [1] * n + [2]
        return np.asarray(out[:length], dtype=np.int64)

    def bayes_probs(self, seq: np.ndarray) -> np.ndarray:
        return anbn_bayes_probs(self, seq)

    def describe(self) -> str:
        return f"a^n b^n (k={self.k}, l={self.l})"


CharTask = DistantBrackets | AnBn


def make_task(name: str, **params: int) -> CharTask:
    """``brackets`` or ``anbn`` with its parameters (the paper's by default)."""
    if name == "brackets":
        return DistantBrackets(**params)  # type: ignore[arg-type]
    if name == "anbn":
        return AnBn(**params)  # type: ignore[arg-type]
    raise InvalidArgument("task", name, "must be 'brackets' or 'anbn'")


def brackets_entropy_rate(s: int, k_min: int, k_max: int, a: int) -> float:
    """Entropy per line / mean line length; for k_min = k_max = k, §4's (s+k) log2(a) / (2s+k+5)."""
    mean_k = (k_min + k_max) / 2
    bits = (s + mean_k) * math.log2(a) + math.log2(k_max - k_min + 1)
    return bits / (2 * s + mean_k + 5)


def brackets_memoryless_rate(s: int, k_min: int, k_max: int, a: int) -> float:
    """The rate of the Bayes predictor that forgets the saved letters: the s repeats cost log2(a) each again."""
    mean_k = (k_min + k_max) / 2
    return brackets_entropy_rate(s, k_min, k_max, a) + s * math.log2(a) / (2 * s + mean_k + 5)


def anbn_no_count_rate(k: int, l: int) -> float:
    """A model that predicts the a's optimally and the b's without counting: log2(l-k+1) bits twice per line."""
    return 2 * math.log2(l - k + 1) / (k + l + 2)


def unigram_entropy(task: CharTask) -> float:
    """Entropy (bits) of the stationary single-character frequencies: the level of a predictor without context."""
    if isinstance(task, AnBn):
        mean_n = (task.k + task.l) / 2
        freq = np.array([mean_n, mean_n, 2.0]) / (2 * mean_n + 2)
    else:
        mean_k = (task.k_min + task.k_max) / 2
        length = 2 * task.s + mean_k + 5
        letters = (2 * task.s + mean_k) / length
        freq = np.array([letters / task.a] * task.a + [2 / length, 2 / length, 1 / length])
    return float(-(freq * np.log2(freq)).sum())


def brackets_bayes_probs(task: DistantBrackets, seq: np.ndarray) -> np.ndarray:
    """P(seq[t] | seq[:t]) under the true process for t = 1..len-1 (the first symbol is skipped), given that
    the stream starts at a line start. Array of shape (len - 1,)."""
    a, s = task.a, task.s
    LB, RB, NL = a, a + 1, a + 2
    probs = np.empty(len(seq) - 1)
    # phase machine over the line: 0 after '[' opening (reading saved), 1 after ']' (free letters),
    # 2 inside the repeat, 3 after the repeat's ']' (newline next), 4 after newline ('[' next)
    phase, pos, free = 0, 0, 0
    saved: list[int] = []
    kmin, kmax = task.k_min, task.k_max
    for t in range(1, len(seq)):
        cur = int(seq[t])
        if phase == 0:  # reading s saved letters after the first '['
            p = (1 / a if cur < a else 0.0) if pos < s else float(cur == RB)
        elif phase == 1:  # free letters: k so far = free; '[' possible when kmin <= free <= kmax
            n_left = kmax - free + 1  # remaining candidate k values >= free
            if free < kmin:
                p_lb = 0.0
            else:
                p_lb = 1 / n_left  # uniform k: hazard of stopping now among k in free..kmax
            p = p_lb if cur == LB else ((1 - p_lb) / a if cur < a else 0.0)
        elif phase == 2:  # the repeat
            p = float(cur == saved[pos]) if pos < s else float(cur == RB)
        elif phase == 3:
            p = float(cur == NL)
        else:
            p = float(cur == LB)
        probs[t - 1] = p
        # advance with cur
        if phase == 0:
            if pos < s:
                saved.append(cur)
                pos += 1
            else:
                phase, free = 1, 0
        elif phase == 1:
            if cur == LB:
                phase, pos = 2, 0
            else:
                free += 1
        elif phase == 2:
            if pos < s:
                pos += 1
            else:
                phase = 3
        elif phase == 3:
            phase = 4
        else:
            phase, pos, saved = 0, 0, []
    return probs


def anbn_bayes_probs(task: AnBn, seq: np.ndarray) -> np.ndarray:
    """P(seq[t] | seq[:t]) under the true process for t = 1..len-1, the stream starting at a line start."""
    k, l = task.k, task.l
    probs = np.empty(len(seq) - 1)
    in_a, n_a, n_b = True, int(seq[0] == 0), 0  # n_a a's seen in this line; n_b b's seen
    for t in range(1, len(seq)):
        cur = int(seq[t])
        if in_a:
            # n uniform on k..l: after n_a a's the line stops with the hazard 1/(l - n_a + 1), never below k
            p_stop = 0.0 if n_a < k else 1 / (l - n_a + 1)
            p = p_stop if cur == 2 else (1 - p_stop if cur == 0 else 0.0)
            if cur == 2:
                in_a, n_b = False, 0
            else:
                n_a += 1
        elif n_b < n_a:  # the counted b's
            p = float(cur == 1)
            n_b += 1
        else:  # n_b == n_a: the closing newline
            p = float(cur == 2)
            in_a, n_a = True, 0
        probs[t - 1] = p
    return probs


def bayes_log_loss_bits(task: CharTask, seq: np.ndarray) -> float:
    """Mean -log2 P(x_t | past) of the Bayes predictor over ``seq`` (an empirical estimate of the entropy rate)."""
    probs = task.bayes_probs(seq)
    if np.any(probs <= 0):
        bad = int(np.argmax(probs <= 0)) + 1
        raise InvalidArgument("seq", f"symbol {int(seq[bad])} at {bad}", f"impossible under {task.describe()}")
    return float(-np.log2(probs).mean())
