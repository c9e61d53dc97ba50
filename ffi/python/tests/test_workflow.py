"""The notebook workflow (train -> analyze -> eval -> predict) gives the `icl` CLI's numbers for
the same seed, bit for bit."""

import json
import pathlib
import re
import shutil
import struct

import numpy as np
import pytest

import icl

from conftest import SEED

TIMING = {"seconds", "setup_seconds", "steps_per_second"}


def test_train_writes_the_cli_run_folder_byte_for_byte(runs):
    py, cli_dir = runs["py"].dir, runs["cli"]
    for name in ("model.safetensors", "metrics.csv", "config.toml"):
        assert (py / name).read_bytes() == (cli_dir / name).read_bytes(), name
    a = json.loads((py / "summary.json").read_text())
    b = json.loads((cli_dir / "summary.json").read_text())
    assert {k: v for k, v in a.items() if k not in TIMING} == {
        k: v for k, v in b.items() if k not in TIMING
    }
    assert a["preset"] == "quick"
    assert runs["py"].summary == a


def test_config_object_trains_like_preset_name(tmp_path, runs):
    cfg = icl.Config.preset("quick").set("train.seed", SEED)
    run = icl.train(cfg, out=tmp_path / "r", progress=False)
    assert (run.dir / "model.safetensors").read_bytes() == (
        runs["py"].dir / "model.safetensors"
    ).read_bytes()


def test_analyze_equals_cli(runs, cli_json):
    want = cli_json("analyze", runs["cli"], "--json", "--no-plot")
    got = runs["py"].analyze()
    assert got == want
    assert list(got) == list(want)  # the same field order as --json
    assert not (runs["py"].dir / "circuits.svg").exists()


def test_analyze_plot_writes_circuits_svg(tmp_path):
    run = icl.train("quick", steps=20, out=tmp_path / "r", progress=False, eval_samples=0)
    run.analyze(plot=True)
    assert (run.dir / "circuits.svg").read_text().lstrip().startswith("<svg")


def test_plot_draws_the_figures_training_wrote(tmp_path):
    run = icl.train("quick", steps=20, out=tmp_path / "r", progress=False, eval_samples=0)
    loss = (run.dir / "loss.svg").read_bytes()
    (run.dir / "loss.svg").unlink()
    assert run.plot() == ["loss.svg", "omega_mu.svg"]
    assert (run.dir / "loss.svg").read_bytes() == loss


def test_eval_equals_cli(runs, cli_json):
    want = cli_json("eval", runs["cli"], "--lengths", "10,40", "--samples", 3000, "--json")
    got = runs["py"].eval(lengths=[10, 40], samples=3000, as_frame=False)
    assert got == want["rows"]
    assert [r["estimator"] for r in got[:2]] == ["model", "vanilla_gd"]


def test_eval_seed_and_engine_equal_cli(runs, cli_json):
    want = cli_json(
        "eval", runs["cli"], "--lengths", "20", "--samples", 500, "--seed", 7,
        "--engine", "scalar", "--json",
    )
    got = runs["py"].eval(lengths=[20], samples=500, seed=7, engine="scalar", as_frame=False)
    assert got == want["rows"]


def test_eval_dataframe_when_pandas_is_installed(runs):
    pd = pytest.importorskip("pandas")
    df = runs["py"].eval(lengths=[10], samples=500)
    assert isinstance(df, pd.DataFrame)
    # "tau" on the model's rows only (NaN in the frame's other rows)
    assert list(df.columns) == ["estimator", "L", "risk", "stderr", "tau"]
    rows = runs["py"].eval(lengths=[10], samples=500, as_frame=False)
    recs = [{k: v for k, v in r.items() if v == v} for r in df.to_dict("records")]
    assert recs == rows


def test_eval_temperature_and_shift_equal_cli(runs, cli_json):
    want = cli_json(
        "eval", runs["cli"], "--lengths", "10", "--samples", 500, "--tau", "0.5,opt",
        "--shift", "x_cov=2", "--shift", "x_mean=2e1", "--json",
    )
    got = runs["py"].eval(
        lengths=[10], samples=500, tau=[0.5, "opt"], shift={"x_cov": 2, "x_mean": "2e1"},
        as_frame=False,
    )
    assert got == want["rows"]
    assert got[0]["tau"] == 0.5 and got[1]["tau_opt"] is True
    assert got[0]["shift"] == {"x_cov": 2.0, "x_mean": "2e1"}
    with pytest.raises(icl.InputError):
        runs["py"].eval(lengths=[10], samples=50, tau=[0])
    with pytest.raises(icl.InputError):
        runs["py"].eval(lengths=[10], samples=50, shift={"x_cov": "[1, 2, 2, 1, -1]"})


def _risk(sq):
    """icl_core::eval's estimate: sequential sums in f64."""
    n, s, ss = 0, 0.0, 0.0
    for v in sq:
        n += 1
        s += v
        ss += v * v
    m = s / n
    var = max(ss / n - m * m, 0.0) * n / max(n - 1.0, 1.0)
    return m, (var / n) ** 0.5


def test_predict_reproduces_the_models_eval_risk_exactly(runs):
    run = runs["py"]
    L, n = 40, 1500
    rows = run.eval(lengths=[L], samples=n, as_frame=False)
    z, y = icl.sample(run.config, n, L, domain="eval")
    assert z.shape == (n, L + 1, 6) and y.shape == (n, 1)
    pred = run.predict(z)
    assert pred.shape == (n, 1) and pred.dtype == np.float64
    # the model computes in f32: targets are compared in f32 as icl eval does
    t = y.astype(np.float32).astype(np.float64)
    sq = ((pred - t) ** 2).mean(axis=1).tolist()
    risk, stderr = _risk(sq)
    model = rows[0]
    assert model["estimator"] == "model"
    assert risk == model["risk"] and stderr == model["stderr"]


def test_predict_same_for_cli_run_and_all_input_forms(runs):
    z, _ = icl.sample("quick", 64, 25, seed=11)
    a = runs["py"].predict(z)
    b = icl.load(runs["cli"]).predict(z)
    np.testing.assert_array_equal(a, b)
    # float32 input (exact in the f32 model), one sequence
    np.testing.assert_array_equal(runs["py"].predict(z.astype(np.float32)), a)
    np.testing.assert_array_equal(runs["py"].predict(z[5]), a[5])
    # another engine: the same model up to f32 rounding (engines agree to the conformance suite's
    # tolerance, not bit for bit)
    np.testing.assert_allclose(runs["py"].predict(z, engine="scalar"), a, rtol=1e-5, atol=1e-6)
    # the query's y-slots are ignored
    z2 = z.copy()
    z2[:, -1, -1] = 123.0
    np.testing.assert_array_equal(runs["py"].predict(z2), a)
    # the input is not modified
    assert np.all(z2[:, -1, -1] == 123.0)


def test_predict_depends_on_the_context(runs):
    z, _ = icl.sample("quick", 4, 40, seed=1)
    a = runs["py"].predict(z)
    z[:, 0, -1] += 10.0
    assert not np.array_equal(runs["py"].predict(z), a)


def test_sample_is_the_library_stream(runs):
    cfg = icl.Config.preset("quick")
    z1, y1 = icl.sample(cfg, 8, 10, seed=5, step=3)
    z2, y2 = icl.sample(cfg, 8, 10, seed=5, step=3)
    np.testing.assert_array_equal(z1, z2)
    np.testing.assert_array_equal(y1, y2)
    # sequence b depends on (seed, domain, step, b) alone: a prefix of a larger batch
    z3, _ = icl.sample(cfg, 3, 10, seed=5, step=3)
    np.testing.assert_array_equal(z3, z1[:3])
    assert not np.array_equal(icl.sample(cfg, 8, 10, seed=5, step=4)[0], z1)
    assert not np.array_equal(icl.sample(cfg, 8, 10, seed=5, step=3, domain="eval")[0], z1)
    assert np.all(z1[:, -1, 5:] == 0.0)  # the query's y-slot
    assert z1.flags.c_contiguous and z1.dtype == np.float64
    # eval defaults: seed 0, step = L
    np.testing.assert_array_equal(
        icl.sample(cfg, 4, 10, domain="eval")[0],
        icl.sample(cfg, 4, 10, seed=0, step=10, domain="eval")[0],
    )


def test_metrics_circuits_params(runs):
    run = runs["py"]
    m = run.metrics(as_frame=False)
    assert list(m) == ["step", "loss", "omega_0", "omega_1", "mu_0", "mu_1"]
    assert m["step"][-1] == run.step == 2000
    assert m["loss"][-1] < m["loss"][0]
    a = run.analyze()
    c = run.circuits()
    assert c["kq"].shape == (2, 6, 6) and c["ov"].shape == (2, 1, 6)
    assert c["omega"].tolist() == [h["omega"] for h in a["heads"]]
    assert c["mu"][:, 0].tolist() == [h["mu"] for h in a["heads"]]
    # the last log row's omega/mu are the final model's (metrics.csv keeps 9 digits)
    np.testing.assert_allclose([m["omega_0"][-1], m["omega_1"][-1]], c["omega"], rtol=1e-7)
    # parameters in the checkpoint layout, equal to the safetensors tensors
    p = run.params()
    raw = (run.dir / "model.safetensors").read_bytes()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + hlen])
    for name, arr in p.items():
        info = header[name]
        assert list(arr.shape) == info["shape"]
        a0, a1 = info["data_offsets"]
        stored = np.frombuffer(raw[8 + hlen + a0 : 8 + hlen + a1], dtype=np.float32)
        np.testing.assert_array_equal(arr.ravel(), stored.astype(np.float64))
    assert set(p) == {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight"}


def test_metrics_dataframe(runs):
    pd = pytest.importorskip("pandas")
    df = runs["py"].metrics()
    assert isinstance(df, pd.DataFrame) and len(df) == len(runs["py"].metrics(as_frame=False)["step"])


def test_he2025_quick_preset_learns(runs):
    run = runs["py"]
    s = run.summary
    assert s["preset"] == "quick" and s["steps"] == 2000 and s["engine"] == "simd"
    assert run.config.to_toml() == icl.Config.preset("quick").set("train.seed", SEED).to_toml()
    # the trivial predictor 0 has risk 1 + sigma2 = 1.1 at L = 40
    assert s["risk"]["L"] == 40 and s["risk"]["risk"] < 0.6
    heads = run.analyze()["heads"]
    assert len(heads) == 2 and all(h["kind"] in ("positive", "negative", "dummy") for h in heads)


def test_load_and_resume_extend(tmp_path, cli):
    run = icl.train("quick", steps=300, out=tmp_path / "a", progress=False, eval_samples=0)
    longer = icl.resume(run.dir, steps=500, progress=False, eval_samples=0)
    assert longer.step == 500
    cli("train", "--preset", "quick", "--steps", 500, "--eval-samples", 0, "--out", tmp_path / "b", "-q")
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (
        tmp_path / "b" / "model.safetensors"
    ).read_bytes()
    assert repr(icl.load(tmp_path / "a")).startswith("<icl.Run ")


def test_engine_and_dtype_equal_cli(tmp_path, cli):
    cfg = icl.Config.preset("quick").set("train.dtype", "f64")
    run = icl.train(cfg, steps=300, engine="scalar", out=tmp_path / "py", progress=False,
                    eval_samples=500)
    cli("train", "--preset", "quick", "--set", "train.dtype=f64", "--steps", 300, "--engine",
        "scalar", "--eval-samples", 500, "--out", tmp_path / "cli", "-q")
    assert (run.dir / "model.safetensors").read_bytes() == (
        tmp_path / "cli" / "model.safetensors"
    ).read_bytes()
    assert run.dtype == "f64" and run.summary["engine"] == "scalar"
    assert run.summary["risk"] == json.loads((tmp_path / "cli" / "summary.json").read_text())["risk"]
    # an f64 model predicts from f64 inputs unrounded
    z, y = icl.sample(cfg, 200, 40, domain="eval")
    sq = ((run.predict(z, engine="scalar") - y) ** 2).mean(axis=1).tolist()
    rows = run.eval(lengths=[40], samples=200, engine="scalar", as_frame=False)
    assert _risk(sq) == (rows[0]["risk"], rows[0]["stderr"])


def test_out_none_trains_into_a_new_temporary_folder():
    import tempfile

    run = icl.train("quick", steps=10, progress=False, eval_samples=0)
    assert run.dir.is_dir() and run.dir.parent == pathlib.Path(tempfile.gettempdir())
    assert run.dir.name.startswith("icl-core-run-") and (run.dir / "model.safetensors").is_file()
    other = icl.train("quick", steps=10, progress=False, eval_samples=0)
    assert other.dir != run.dir
    shutil.rmtree(run.dir)
    shutil.rmtree(other.dir)


def test_eval_plot_writes_the_figure_cli_writes(runs, cli_json, tmp_path):
    # the figure of the same rows is the same bytes from Python and from `icl eval --plot`
    cli_json(
        "eval", runs["cli"], "--lengths", "10,40", "--samples", 300, "--json",
        "--plot", str(tmp_path / "cli.svg"),
    )
    rows = runs["py"].eval(lengths=[10, 40], samples=300, as_frame=False, plot=str(tmp_path / "py.svg"))
    svg = (tmp_path / "py.svg").read_text()
    assert svg == (tmp_path / "cli.svg").read_text()
    texts = [t.strip() for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]
    # the legend names the estimators in words ("vanilla GD (η*)"), not by their ids
    assert {r["estimator"] for r in rows} >= {"model", "vanilla_gd"}
    assert "model" in texts and "vanilla GD (η*)" in texts, texts
    assert not any("_" in t for t in texts), texts
    runs["py"].eval(lengths=[10, 40], samples=300, plot=str(tmp_path / "py.png"))
    assert (tmp_path / "py.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
