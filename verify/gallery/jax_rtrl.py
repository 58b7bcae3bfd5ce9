r"""Gallery adapters for github.com/FranzKnut/jax_rtrl @ 7d95ca607d02 (to be written: issue 38)."""

from __future__ import annotations

from verify.gallery import Repository

REPO = Repository(
    name="jax_rtrl",
    url="FranzKnut/jax_rtrl",
    commit="7d95ca607d021ef8f35bdc281a06c06222442860",
    license="MIT",
    language="jax",
    marker=("jax_rtrl/__init__.py",),
    entries=(),
    cite="Knut et al., jax_rtrl (CITATION.cff)",
)
