"""The papers the claim catalog cites: one :class:`Paper` per source, keyed by its short citation.

A claim's ``paper`` field is the short key (``"Tallec & Ollivier 2017"``); the catalog,
``rnn-verify list`` and the report render the full citation from this table (authors,
year, title, venue, arXiv id). Every field is taken from the paper's own text as the
toolkit's authors read it; where the text does not print a field (the FPP paper is an
anonymous submission under review, the RTRL convergence paper's extracted text lost
its author line) the entry says so instead of guessing, and no arXiv id is given that
the text does not print.

>>> from theory.papers import cite
>>> cite("Tallec & Ollivier 2017")
'Corentin Tallec, Yann Ollivier (2017). Unbiased Online Recurrent Optimization. arXiv preprint, arXiv:1702.05043.'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BELLEC", "COOIJMANS_MARTENS", "DESIGN_NOTES", "FPP", "KFRTRL", "MARSCHALL", "MILLER_HARDT", "MURRAY", "OK",
           "PAPERS", "RTRL_CONVERGENCE", "SNAP", "UORO", "Paper", "cite", "cited_in"]  # fmt: skip


@dataclass(frozen=True)
class Paper:
    """One cited source. ``key`` is the short citation used in the catalog and report tables."""

    key: str
    authors: str
    year: str
    title: str
    venue: str
    arxiv: str = ""
    note: str = ""

    def citation(self) -> str:
        """Authors (year). Title. Venue[, arXiv:id]."""
        year = f" ({self.year})" if self.year else ""
        parts = [f"{self.authors}{year}. {self.title}. {self.venue}"]
        if self.arxiv:
            parts.append(f", arXiv:{self.arxiv}")
        text = "".join(parts) + "."
        return f"{text} {self.note}" if self.note else text


UORO = Paper(
    key="Tallec & Ollivier 2017",
    authors="Corentin Tallec, Yann Ollivier",
    year="2017",
    title="Unbiased Online Recurrent Optimization",
    venue="arXiv preprint",
    arxiv="1702.05043",
)
COOIJMANS_MARTENS = Paper(
    key="Cooijmans & Martens 2019",
    authors="Tim Cooijmans, James Martens",
    year="2019",
    title="On the Variance of Unbiased Online Recurrent Optimization",
    venue="arXiv preprint",
    arxiv="1902.02405",
    note="Sections are cited as headed in the first author's summary blog post of 2019-02-16.",
)
MILLER_HARDT = Paper(
    key="Miller & Hardt 2018",
    authors="John Miller, Moritz Hardt",
    year="2018",
    title="When Recurrent Models Don't Need To Be Recurrent",
    venue="Preprint, University of California, Berkeley, May 30, 2018",
)
FPP = Paper(
    key="FPP paper (anonymous)",
    authors="Anonymous authors",
    year="year not printed",
    title="Training Recurrent Neural Networks Online by Learning Explicit State Variables",
    venue="Paper under double-blind review",
    note="The paper introduces Fixed Point Propagation (FPP).",
)
RTRL_CONVERGENCE = Paper(
    key="RTRL convergence paper",
    authors="Author line missing from the text used",
    year="2024 or later",
    title="Convergence Analysis of Real-time Recurrent Learning (RTRL) for a class of Recurrent Neural Networks",
    venue="Preprint",
    note="Its acknowledgements name Samuel Lam (NSF DMS-2311500); its formulas were lost in the text the toolkit "
    "was built from, and §7.1-7.2 are rebuilt from the prose.",
)
SNAP = Paper(
    key="Menick et al. 2021",
    authors="Jacob Menick, Erich Elsen, Utku Evci, Simon Osindero, Karen Simonyan, Alex Graves",
    year="2021",
    title="Practical Real Time Recurrent Learning with a Sparse Approximation",
    venue="International Conference on Learning Representations (ICLR 2021)",
    arxiv="2006.07232",
)
MURRAY = Paper(
    key="Murray 2019",
    authors="James M. Murray",
    year="2019",
    title="Local online learning in recurrent networks with random feedback",
    venue="eLife 8:e43299, doi:10.7554/eLife.43299",
    note="Preprint bioRxiv 10.1101/458570. Introduces RFLO (random-feedback local online learning).",
)
BELLEC = Paper(
    key="Bellec et al. 2020",
    authors="Guillaume Bellec, Franz Scherr, Anand Subramoney, Elias Hajek, Darjan Salaj, Robert Legenstein, "
    "Wolfgang Maass",
    year="2020",
    title="A solution to the learning dilemma for recurrent networks of spiking neurons",
    venue="Nature Communications 11:3625, doi:10.1038/s41467-020-17236-y",
    note="Preprint bioRxiv 10.1101/738385; an earlier version of e-prop is arXiv:1901.09049. Introduces e-prop.",
)
MARSCHALL = Paper(
    key="Marschall et al. 2020",
    authors="Owen Marschall, Kyunghyun Cho, Cristina Savin",
    year="2020",
    title="A Unified Framework of Online Learning Algorithms for Training Recurrent Neural Networks",
    venue="Journal of Machine Learning Research 21(135):1-34",
    arxiv="1907.02649",
)
OK = Paper(
    key="Benzing et al. 2019",
    authors="Frederik Benzing, Marcelo Matheus Gauy, Asier Mujika, Anders Martinsson, Angelika Steger",
    year="2019",
    title="Optimal Kronecker-Sum Approximation of Real Time Recurrent Learning",
    venue="International Conference on Machine Learning (ICML 2019)",
    arxiv="1902.03993",
    note="Only its abstract was at hand when rnn-verify's OK was written: the algorithm is reconstructed from the "
    "optimal unbiased low-rank approximation it rests on (verify.estimators.ok states the reading).",
)
KFRTRL = Paper(
    key="Mujika, Meier & Steger 2018",
    authors="Asier Mujika, Florian Meier, Angelika Steger",
    year="2018",
    title="Approximating Real-Time Recurrent Learning with Random Kronecker Factors",
    venue="Advances in Neural Information Processing Systems 31 (NeurIPS 2018)",
    arxiv="1805.10842",
)
DESIGN_NOTES = Paper(
    key="rnn-verify design notes",
    authors="rnn-verify developers",
    year="",
    title="Design notes: exactness targets, numerical policy, notes from reading the papers",
    venue="Module theory.notes of this package (print them: python -m theory.notes)",
)

#: every cited source by its short key
PAPERS: dict[str, Paper] = {
    p.key: p
    for p in (
        UORO,
        COOIJMANS_MARTENS,
        MILLER_HARDT,
        FPP,
        RTRL_CONVERGENCE,
        SNAP,
        KFRTRL,
        OK,
        MURRAY,
        BELLEC,
        MARSCHALL,
        DESIGN_NOTES,
    )
}


def cite(key: str) -> str:
    """The full citation of ``key``; an unknown key (a user's own claim) is returned as it is."""
    paper = PAPERS.get(key)
    return paper.citation() if paper is not None else key


def cited_in(*texts: str) -> tuple[str, ...]:
    """Keys of every known paper whose short key occurs in ``texts``, in table order."""
    return tuple(k for k in PAPERS if any(k in t for t in texts))
