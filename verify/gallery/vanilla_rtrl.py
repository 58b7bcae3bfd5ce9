r"""Gallery adapters for github.com/omarschall/vanilla-rtrl @ 4602f366b285 (to be written: issue 38)."""

from __future__ import annotations

from verify.gallery import Repository

REPO = Repository(
    name="vanilla-rtrl",
    url="omarschall/vanilla-rtrl",
    commit="4602f366b285687e03ba343c9344e072777bf8f3",
    license="none (no license file: imported from a checkout, never copied)",
    language="numpy",
    marker=("core/RNN.py", "learning_algorithms"),
    entries=(),
    cite=(
        'Marschall, Cho & Savin 2020, "A unified framework of online learning algorithms for training recurrent '
        'neural networks", JMLR 21(135), arXiv:1907.02649'
    ),
)
