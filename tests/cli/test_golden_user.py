"""Issue 25 (and 23): a user's own arrays checked against the golden pair -- any subset, no hashes, unknown
names refused, what was not supplied listed, failures diagnosed; extra arrays in a golden pair refused."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from verify.cli import main
from verify.examples import golden_numpy
from verify.oracles.golden_user import check_user_results, diagnose

GOLDEN = Path(__file__).resolve().parents[2] / "reports" / "golden" / "golden.npz"
ELMAN = ("elman_tanh", "elman_relu", "linear")


def _check(mine: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["golden", "--check", str(mine), "--reference", str(GOLDEN)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _mine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "mine.npz"
    assert golden_numpy.main([str(GOLDEN.with_suffix(".json")), str(out)]) == 0
    capsys.readouterr()
    return out


def test_the_numpy_example_verifies_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = _mine(tmp_path, capsys)
    with np.load(mine) as z:
        assert "__header__" not in z.files and len(z.files) == 18  # no header, no hashes: nothing re-stamped
    code, out, _ = _check(mine, capsys)
    assert code == 0, out
    assert "18 of 18 arrays verify" in out and out.strip().endswith("OK")
    assert "cases: lstm, gru, gru_batch2, influence_balancing" in out  # not supplied: listed, not an error
    assert "fpp: in elman_tanh, elman_relu, linear" in out and "diagnosis" not in out


def test_a_subset_of_families_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with np.load(GOLDEN) as z:
        np.savez(
            tmp_path / "g.npz",
            lstm__gradient=z["lstm__gradient"],
            gru__fpp_T2_sample_losses=z["gru__fpp_T2_sample_losses"],
        )
    code, out, _ = _check(tmp_path / "g.npz", capsys)
    assert code == 0 and "2 of 2 arrays verify" in out
    assert "states: in lstm, gru" in out and "fpp: in lstm" in out
    assert "gru__fpp_T1_sample_losses" in out  # the rest of a family supplied in part is named


def test_unknown_array_name_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with np.load(GOLDEN) as z:
        np.savez(tmp_path / "g.npz", elman_tanh__gradeint=z["elman_tanh__gradient"], lstm__states=z["lstm__states"])
    code, out, err = _check(tmp_path / "g.npz", capsys)
    assert code == 2 and not out
    assert "elman_tanh__gradeint" in err and "did you mean 'elman_tanh__gradient'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "bad, words",
    [
        ("golden", "drop --reference"),
        ("empty", "holds none"),
        ("text", "real numeric array"),
        ("not-npz", "not a golden .npz"),
    ],
)
def test_bad_user_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, words: str) -> None:
    mine = tmp_path / "g.npz"
    if bad == "golden":
        mine.write_bytes(GOLDEN.read_bytes())
    elif bad == "empty":
        np.savez(mine)
    elif bad == "text":
        np.savez(mine, linear__losses=np.array(["a", "b"]))
    else:
        mine.write_bytes(b"not a zip")
    before = mine.read_bytes()
    code, _, err = _check(mine, capsys)
    assert code == 2 and words in err and str(mine) in err
    assert mine.read_bytes() == before


def test_reference_needs_check_and_must_be_intact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "--reference", str(GOLDEN)]) == 2
    assert "--reference" in capsys.readouterr().err
    with np.load(GOLDEN) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["linear__gradient"] = arrays["linear__gradient"] * 1.001
    ref = tmp_path / "ref.npz"
    np.savez(ref, **arrays)
    ref.with_suffix(".json").write_bytes(GOLDEN.with_suffix(".json").read_bytes())
    np.savez(tmp_path / "g.npz", linear__gradient=arrays["linear__gradient"])
    assert main(["golden", "--check", str(tmp_path / "g.npz"), "--reference", str(ref)]) == 2
    err = capsys.readouterr().err
    assert "linear__gradient" in err and "reference is damaged" in err


def test_shape_as_stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with np.load(GOLDEN) as z:
        L = z["gru__total_loss"]
    assert L.shape == ()  # issue 25: stated as shape (), stored as ()
    np.savez(tmp_path / "g.npz", gru__total_loss=L.reshape(1))
    code, out, _ = _check(tmp_path / "g.npz", capsys)
    assert code == 1 and "FAIL gru__total_loss: shape [1], the reference's is []" in out


def test_mutant_without_the_immediate_term_is_diagnosed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readout's own ∂ℓ_t/∂θ left out: gradients off, influences right -> gradient assembly."""
    monkeypatch.setattr(golden_numpy, "immediate_gradient", lambda s, e, p: np.zeros(p))
    code, out, _ = _check(_mine(tmp_path, capsys), capsys)
    assert code == 1
    report = check_user_results(tmp_path / "mine.npz", GOLDEN)
    assert sorted(report.failures) == sorted(f"{c}__{q}" for c in ELMAN for q in ("gradient", "per_step_gradients"))
    assert "FAIL elman_tanh__gradient" in out and "the error is in readout.V, readout.c" in out
    diagnosis = out.split("diagnosis", 1)[1]
    assert "gradient assembly" in diagnosis and "immediate term" in diagnosis
    assert "Jacobian recursion" not in diagnosis


def test_mutant_with_a_transposed_state_jacobian_is_diagnosed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """(∂F/∂s)ᵀ in the recursion: influences off while the states verify -> the Jacobian recursion."""
    right = golden_numpy.dF_ds
    monkeypatch.setattr(golden_numpy, "dF_ds", lambda W, dphi: right(W, dphi).T)
    code, out, _ = _check(_mine(tmp_path, capsys), capsys)
    assert code == 1
    report = check_user_results(tmp_path / "mine.npz", GOLDEN)
    assert {f"{c}__influence" for c in ELMAN} <= set(report.failures)
    assert not any(f.endswith(("__states", "__losses", "__total_loss")) for f in report.failures)
    diagnosis = out.split("diagnosis", 1)[1]
    assert "Jacobian recursion" in diagnosis and "transposed dF/ds" in diagnosis
    assert "gradient assembly" not in diagnosis


def test_diagnosis_table_patterns() -> None:
    assert diagnose({"states": {"a": True}, "gradient": {"a": True}}) == []
    first = diagnose({"states": {"a": False}, "losses": {"a": False}, "influence": {"a": False}})
    assert "forward pass" in first[0] and len(first) == 1  # the earliest failure explains the rest
    only = diagnose({"losses": {"a": True, "b2": False}}, batched=["b2"])
    assert any("readout or loss" in d for d in only) and any("only the batched case" in d for d in only)
    per = diagnose({"gradient": {"a": True}, "per_step_gradients": {"a": False}})
    assert "TOTAL derivative" in per[0]
    fpp = diagnose({"fpp": {"a": False}})
    assert "lambda/2" in fpp[0] and "not summed over the window" in fpp[0]


# ---------------------------------------------------------------- issue 23: the published format
def _with(tmp_path: Path, edit: dict[str, np.ndarray | None]) -> Path:
    bad = tmp_path / "g.npz"
    with zipfile.ZipFile(GOLDEN) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            if item.filename[: -len(".npy")] not in edit:
                zout.writestr(item, zin.read(item.filename))
        for key, value in edit.items():
            if value is not None:
                buf = io.BytesIO()
                np.save(buf, value)
                zout.writestr(f"{key}.npy", buf.getvalue())
    bad.with_suffix(".json").write_bytes(GOLDEN.with_suffix(".json").read_bytes())
    return bad


def test_published_check_refuses_extra_and_missing_arrays_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23: an extra array used to give '196 of 196 arrays verify', exit 0."""
    bad = _with(tmp_path, {"lstm__extra": np.zeros(3), "gru__my_grad": np.zeros(2)})
    assert main(["golden", "--check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not in the header 2: gru__my_grad, lstm__extra" in err and str(bad) in err
    bad = _with(tmp_path, {"gru__losses": None, "lstm__states": None})
    assert main(["golden", "--check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "missing 2:" in err and "gru__losses" in err and "lstm__states" in err


def test_the_example_refuses_bad_paths_and_foreign_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header = str(GOLDEN.with_suffix(".json"))
    assert golden_numpy.main([str(tmp_path / "absent.json"), str(tmp_path / "o.npz")]) == 2
    assert golden_numpy.main([header, str(tmp_path / "o.txt")]) == 2
    foreign = tmp_path / "data.npz"
    np.savez(foreign, weights=np.ones(3))
    before = foreign.read_bytes()
    assert golden_numpy.main([header, str(foreign)]) == 2
    assert foreign.read_bytes() == before and "not overwritten" in capsys.readouterr().err
