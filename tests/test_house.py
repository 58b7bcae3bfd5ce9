"""The house keeps its shape (issue 20; DESIGN "Target layout"): measured by ``python -m verify.bench.house``."""

from __future__ import annotations

from verify.bench.house import LONG, measure

HOUSE = measure()


def test_no_import_circles_between_modules_or_rooms() -> None:
    assert HOUSE.circles == [] and HOUSE.room_circles == []


def test_at_most_twelve_floors() -> None:
    assert max(HOUSE.floors().values()) + 1 <= 12


def test_check_modules_decide_and_stay_short() -> None:
    over = {path: n for path, n in HOUSE.check_lines.items() if n > 400}
    assert not over, over


def test_few_long_functions() -> None:
    assert len(HOUSE.long_functions) <= 15, [f"{p}:{n} ({s})" for s, p, n in HOUSE.long_functions]


def test_domain_packages_never_import_the_floors_above() -> None:
    """A domain package computes for a check; it never reaches into checks, the run configuration, the
    implementations under test, the schedulers, the test helpers or the CLI."""
    above = ("verify.checks", "verify.config", "verify.impl", "verify.run", "verify.testing", "verify.cli")
    domains = ("verify.model", "verify.oracles", "verify.estimators", "verify.stats", "verify.truncation",
               "verify.rtrl", "verify.uoro", "verify.fpp", "verify.gpu")  # fmt: skip
    bad = [
        (mod, t)
        for mod, targets in HOUSE.edges.items()
        if mod.startswith(domains)
        for t in targets
        if t.startswith(above)
    ]
    assert not bad, bad


def test_the_measure_sees_a_circle_and_a_long_function(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The tester is tested: a planted circle and a planted long function are found."""
    pkg = tmp_path / "verify"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from verify.b import g\n\ndef f():\n    return g()\n")
    body = "".join(f"    x{i} = {i}\n" for i in range(LONG + 1))
    (pkg / "b.py").write_text(f"def g():\n    from verify.a import f\n{body}    return f\n")
    (tmp_path / "theory").mkdir()
    (tmp_path / "theory" / "__init__.py").write_text("")
    (pkg / "checks").mkdir()
    h = measure(tmp_path)
    assert h.circles == [["verify.a", "verify.b"]]
    assert [name for _, _, name in h.long_functions] == ["g"]
    assert h.in_function_imports == 1
