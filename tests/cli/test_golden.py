"""Portable golden vectors: export, re-verify, tampering named, corrupt files refused, numpy-only use."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from verify.cli import main
from verify.oracles.golden import CHECK_RTOL, HEADER_KEY, check_golden
from verify.testing.strategies import CELL_KINDS


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("golden") / "golden.npz"
    assert main(["golden", "--out", str(path), "--k", "1", "3"]) == 0
    return path


def _rewrite(src: Path, dst: Path, edit: dict[str, np.ndarray], header: dict[str, object] | None = None) -> None:
    """Write dst.npz with ``edit`` applied (and ``header`` inside), plus its matching dst.json sidecar."""
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(edit)
    if header is not None:
        arrays[HEADER_KEY] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    dst.write_bytes(buf.getvalue())
    if HEADER_KEY in arrays:
        dst.with_suffix(".json").write_bytes(arrays[HEADER_KEY].tobytes())
    else:
        dst.with_suffix(".json").write_bytes(src.with_suffix(".json").read_bytes())


def test_round_trip_checks(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["golden", "--check", str(golden)]) == 0
    assert capsys.readouterr().out.strip().endswith("OK")
    header = json.loads(golden.with_suffix(".json").read_text())
    kinds = {c["problem"]["cell"]["kind"] for c in header["cases"]}
    assert set(CELL_KINDS) | {"influence-balancing"} <= kinds
    assert {c["problem"]["loss"] for c in header["cases"]} == {"squared-error", "cross-entropy"}
    assert any(c["sizes"]["batch"] for c in header["cases"])
    for case in header["cases"]:
        assert case["equations"]["cell"] and case["equations"]["loss"] and case["layout"]
        names = set(case["arrays"])
        assert {"theta", "inputs", "targets", "s0", "losses", "gradient", "per_step_gradients", "influence"} <= names
        assert {
            "truncated_model_gradient_final_k1",
            "truncated_model_gradient_final_k3",
            "tbptt_gradient_total_k3",
        } <= names
    assert header["check_rtol"] == CHECK_RTOL
    with np.load(golden) as z:  # the header inside the npz is the sidecar's
        assert json.loads(z[HEADER_KEY].tobytes().decode()) == header


def test_tampered_array_fails_naming_the_quantity(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with np.load(golden) as z:
        g = z["lstm__gradient"].copy()
    g[3] += 1e-3 * np.abs(g).max()
    bad = tmp_path / "bad.npz"
    _rewrite(golden, bad, {"lstm__gradient": g})
    assert main(["golden", "--check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL lstm__gradient" in out and "SHA-256" in out and "recomputed value differs" in out
    assert check_golden(bad).failures == ["lstm__gradient"]


def test_tampering_with_the_checksum_updated_is_still_caught(golden: Path, tmp_path: Path) -> None:
    import hashlib

    header = json.loads(golden.with_suffix(".json").read_text())
    with np.load(golden) as z:
        infl = z["gru__influence"].copy()
    infl[-1, 0, 0] += 1e-6 * np.abs(infl).max()  # far below any plot, far above round-off
    case = next(c for c in header["cases"] if c["name"] == "gru")
    case["arrays"]["influence"]["sha256"] = hashlib.sha256(infl.tobytes()).hexdigest()
    bad = tmp_path / "bad.npz"
    _rewrite(golden, bad, {"gru__influence": infl}, header)
    assert check_golden(bad).failures == ["gru__influence"]


def test_tampered_input_fails_the_input_and_what_depends_on_it(golden: Path, tmp_path: Path) -> None:
    with np.load(golden) as z:
        theta = z["linear__theta"].copy()
    theta[0] += 0.1
    bad = tmp_path / "bad.npz"
    _rewrite(golden, bad, {"linear__theta": theta})
    failures = check_golden(bad).failures
    assert "linear__theta" in failures and "linear__gradient" in failures
    assert all(f.startswith("linear__") for f in failures)


@pytest.mark.parametrize("damage", ["truncate", "no-header", "not-golden", "missing-array"])
def test_corrupt_golden_file_exit_2(
    golden: Path, tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.npz"
    bad.with_suffix(".json").write_bytes(golden.with_suffix(".json").read_bytes())
    if damage == "truncate":
        bad.write_bytes(golden.read_bytes()[:1000])
    elif damage == "no-header":
        with np.load(golden) as z:
            arrays = {k: z[k] for k in z.files if k != HEADER_KEY}
        np.savez(bad, **arrays)
    elif damage == "not-golden":
        _rewrite(golden, bad, {}, {"format": "something-else"})
    else:
        with zipfile.ZipFile(golden) as zin, zipfile.ZipFile(bad, "w") as zout:
            for item in zin.infolist():
                if item.filename != "gru__losses.npy":
                    zout.writestr(item, zin.read(item.filename))
    before = bad.read_bytes()
    assert main(["golden", "--check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and ("golden" in err or HEADER_KEY in err) and "Traceback" not in err
    assert bad.read_bytes() == before  # checking never writes


def test_export_bad_input_exit_2(tmp_path: Path) -> None:
    assert main(["golden", "--out", str(tmp_path / "g.txt")]) == 2
    assert main(["golden", "--out", str(tmp_path / "g.npz"), "--k", "0"]) == 2
    assert main(["golden", "--check", str(tmp_path / "absent.npz")]) == 2


def test_numpy_only_consumer_reproduces_the_linear_case(golden: Path) -> None:
    """What another framework does: read the header, rebuild the model from its equations, compare."""
    header = json.loads(golden.with_suffix(".json").read_text())
    case = next(c for c in header["cases"] if c["name"] == "linear")
    assert case["equations"]["cell"] == "s_t = W s_{t-1} + U x_t + b"
    with np.load(golden) as z:
        a = {k.split("__", 1)[1]: z[k] for k in z.files if k.startswith("linear__")}

    def params(theta: np.ndarray) -> dict[str, np.ndarray]:
        return {e["name"]: theta[e["offset"] : e["offset"] + e["size"]].reshape(e["shape"]) for e in case["layout"]}

    def losses(theta: np.ndarray) -> np.ndarray:
        p = params(theta)
        s, out = a["s0"], []
        for t in range(a["inputs"].shape[0]):
            s = p["cell.W"] @ s + p["cell.U"] @ a["inputs"][t] + p["cell.b"]
            y = p["readout.V"] @ s + p["readout.c"]
            out.append(0.5 * np.sum((y - a["targets"][t]) ** 2))
        return np.array(out)

    np.testing.assert_allclose(losses(a["theta"]), a["losses"], rtol=1e-13, atol=0)
    h = 1e-6  # central differences of L against the stored exact gradient
    fd = np.array(
        [
            (losses(a["theta"] + h * e).sum() - losses(a["theta"] - h * e).sum()) / (2 * h)
            for e in np.eye(a["theta"].size)
        ]
    )
    np.testing.assert_allclose(fd, a["gradient"], rtol=0, atol=1e-7 * np.abs(a["gradient"]).max())
    # FPP eq. (7) with T = 1: dL_i/ds_i = lambda (s_i - s_hat_i), s_hat_i = f(s_{i-1}, o_i); zero outside rows i-1, i
    p, S, G = params(a["theta"]), a["fpp_states"], a["fpp_T1_sample_state_gradients"]
    for row, i in enumerate(range(1, S.shape[0])):
        s_hat = p["cell.W"] @ S[i - 1] + p["cell.U"] @ a["inputs"][i - 1] + p["cell.b"]
        np.testing.assert_allclose(G[row, i], 1.0 * (S[i] - s_hat), rtol=1e-12, atol=1e-15)
        others = np.delete(G[row], [i - 1, i], axis=0)
        assert not others.any()


def test_published_golden_file_verifies() -> None:
    """reports/golden/golden.npz is the committed copy for other frameworks (regenerate: rnn-verify golden
    --out reports/golden/golden.npz)."""
    path = Path(__file__).resolve().parents[2] / "reports" / "golden" / "golden.npz"
    report = check_golden(path)
    assert report.ok, report.format()


# ---------------------------------------------------------------- issue 12, case 4
def test_check_accepts_either_file_of_the_pair(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["golden", "--check", str(golden.with_suffix(".json"))]) == 0
    assert capsys.readouterr().out.strip().endswith("OK")


def _pair(golden: Path, tmp_path: Path) -> Path:
    bad = tmp_path / "g.npz"
    bad.write_bytes(golden.read_bytes())
    bad.with_suffix(".json").write_bytes(golden.with_suffix(".json").read_bytes())
    return bad


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda h: h.update(check_rtol="1e-9"), "check_rtol"),
        (lambda h: h.update(ks=["1", "3"]), "ks[0]"),
        (lambda h: h["cases"][2]["arrays"].pop("theta"), "cases[2].arrays.theta"),
        (lambda h: h["cases"][0]["problem"]["cell"].update(n="3"), "cases[0].problem.cell.n"),
    ],
)
@pytest.mark.parametrize("where", ["json", "npz", "both"])
def test_header_of_wrong_types_exit_2_naming_file_and_field(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object, field: str, where: str
) -> None:
    bad = _pair(golden, tmp_path)
    header = json.loads(golden.with_suffix(".json").read_text())
    edit(header)  # type: ignore[operator]
    if where in ("npz", "both"):
        _rewrite(golden, bad, {}, header)
    if where in ("json", "both"):
        bad.with_suffix(".json").write_text(json.dumps(header))
    for named in (bad, bad.with_suffix(".json")):
        capsys.readouterr()
        assert main(["golden", "--check", str(named)]) == 2
        err = capsys.readouterr().err
        assert f"field {field} = " in err and "expected" in err and "Traceback" not in err
        assert str(bad.with_suffix(".json")) in err or str(bad) in err


def test_corrupted_json_of_the_pair_is_never_ignored(
    golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12: a corrupted golden.json passed to --check used to be ignored (OK, exit 0)."""
    bad = _pair(golden, tmp_path)
    side = bad.with_suffix(".json")
    side.write_text(side.read_text()[:500])
    for named in (side, bad):
        assert main(["golden", "--check", str(named)]) == 2
        err = capsys.readouterr().err
        assert str(side) in err and "not valid JSON" in err
    header = json.loads(golden.with_suffix(".json").read_text())
    header["seed"] = 1  # valid, but not the header inside the .npz
    side.write_text(json.dumps(header))
    assert main(["golden", "--check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "field seed" in err and "same header as inside g.npz" in err
    side.unlink()
    assert main(["golden", "--check", str(bad)]) == 2
    assert "g.json" in capsys.readouterr().err
    bad.unlink()
    assert main(["golden", "--check", str(side)]) == 2


def test_random_bytes_are_not_a_golden_npz(golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _pair(golden, tmp_path)
    bad.write_bytes(np.random.default_rng(1).bytes(10_000))
    assert main(["golden", "--check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not a golden .npz" in err and "pickle" not in err


def test_golden_seed_out_of_range_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from verify._validate import MAX_SEED

    out = tmp_path / "g.npz"
    assert main(["golden", "--out", str(out), "--seed", str(2**70)]) == 2
    err = capsys.readouterr().err
    assert "--seed" in err and str(MAX_SEED) in err and "Traceback" not in err
    assert main(["golden", "--out", str(out), "--k", "100000000"]) == 2
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_export_never_overwrites_a_json_that_is_not_a_golden_header(tmp_path: Path) -> None:
    mine = tmp_path / "data.json"
    mine.write_text('{"my": "data"}')
    assert main(["golden", "--out", str(tmp_path / "data.npz")]) == 2
    assert mine.read_text() == '{"my": "data"}' and not (tmp_path / "data.npz").exists()
