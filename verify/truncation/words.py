"""The words of the truncation bound checks' summaries (:mod:`verify.checks.truncation`; Miller & Hardt 2019,
"Stable Recurrent Models", arXiv:1805.10369, Lemma 1 and Lemma 2): a bound over the random suite and on the
extremal scalar system."""

from __future__ import annotations

from collections.abc import Sequence

from verify.truncation import bounds

__all__ = ["extremal_text", "failing", "fixtures_text", "suite_text"]


def suite_text(statement: str, fails: Sequence[str], n: int, where: str) -> str:
    """'<statement> holds at every <where> on n random instances' or 'VIOLATED on m/n random instances'."""
    if not fails:
        return f"{statement} holds at every {where} on {n} random instances"
    return f"{statement} VIOLATED on {len(fails)}/{n} random instances"


def fixtures_text(fx: bounds.ExtremalFixture, key: str = "tightness", fmt: str = ".4f") -> str:
    return ", ".join(f"{f[key]:{fmt}} (lam={lam})" for lam, f in fx.records.items())


def extremal_text(fx: bounds.ExtremalFixture, quantity: str, key: str = "tightness", fmt: str = ".4f") -> str:
    """The extremal system: tightness at each λ, where its bound is violated, and ``quantity`` against its closed
    form (equal, or by how many round-off budgets it differs)."""
    recs = fx.records
    text = f"extremal scalar system: tightness {fixtures_text(fx, key, fmt)}"
    over = [lam for lam, f in recs.items() if not f["holds"]]
    if over:
        text += f", bound VIOLATED at lam={', '.join(over)}"
    off = {lam: f["closed_form_ratio"] for lam, f in recs.items() if not f["closed_form_ok"]}
    if not off:
        return text + f"; {quantity} = closed form"
    return (
        text + f"; {quantity} differs from the closed form by up to {max(off.values()):.2g} x its round-off budget "
        f"(lam={', '.join(off)})"
    )


def failing(fails: Sequence[str], head: str = "failing") -> str:
    return f"; {head}: {', '.join(fails[:5])}" if fails else ""
