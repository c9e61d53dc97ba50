"""Configs, presets and theory: the same registry and contracts as the CLI."""

import copy
import csv

import numpy as np
import pytest

import icl


def test_presets_equal_cli(cli_json):
    want = cli_json("presets", "--json")
    got = icl.presets()
    assert list(got.items()) == [(p["name"], p["description"]) for p in want]
    assert "he2025" in got and "quick" in got


def test_keys_equal_cli(cli_json):
    assert icl.Config.keys() == cli_json("presets", "--keys", "--json")


def test_preset_toml_equals_cli(cli):
    for name in ("he2025", "quick", "zhang2025-fig3"):
        assert icl.Config.preset(name).to_toml() == cli("presets", "--show", name).stdout


def test_set_get_chain_and_round_trip():
    cfg = icl.Config.preset("he2025").set("model.heads", 4).set("train.lr", 3e-3)
    assert cfg["model.heads"] == 4 and cfg.get("train.lr") == 3e-3
    assert cfg.preset_name == "he2025"
    cfg["task.sigma2"] = 0.2
    cfg["task.kind"] = "anisotropic"
    cfg.set("train.dtype", "f64").set("task.query_noise", False)
    assert cfg["task.kind"] == "anisotropic" and cfg["task.query_noise"] is False
    back = icl.Config.from_toml(cfg.to_toml())
    assert back == cfg and back.preset_name is None
    assert cfg.to_dict()["model.heads"] == 4
    assert str(cfg) == cfg.to_toml()
    assert repr(cfg).startswith("<icl.Config")


def test_lists_and_numpy_values():
    cfg = icl.Config.preset("zhang2025-fig3")
    cfg.set("task.eigs", [0.5, 0.3, 0.15, 0.05])
    assert cfg["task.eigs"] == [0.5, 0.3, 0.15, 0.05] and cfg["task.d"] == 4
    cfg.set("task.eigs", np.array([0.4, 0.3, 0.2, 0.1]))
    assert cfg["task.eigs"] == [0.4, 0.3, 0.2, 0.1]
    cfg.set("task.eigs", "0.5,0.5")  # the CLI's older comma text
    assert cfg["task.eigs"] == [0.5, 0.5] and cfg["task.d"] == 2
    cfg2 = icl.Config().set("model.heads", np.int64(3)).set("train.lr", np.float32(0.5))
    assert cfg2["model.heads"] == 3 and cfg2["train.lr"] == 0.5


def test_copy_is_independent():
    a = icl.Config.preset("quick")
    for b in (a.copy(), copy.copy(a), copy.deepcopy(a)):
        b.set("model.heads", 5)
        assert a["model.heads"] == 2 and b["model.heads"] == 5
        assert b.preset_name == "quick"


def test_config_load_file(runs):
    cfg = icl.Config.load(runs["cli"] / "config.toml")
    assert cfg == runs["py"].config


def test_theory_equals_cli(cli_json):
    got = icl.theory("eta-star", d=5, L=40, sigma2=0.1)
    want = cli_json("theory", "eta-star", "--d", 5, "--L", 40, "--sigma2", 0.1, "--json")
    assert got == want
    assert got["value"] == want["value"] and isinstance(got["value"], float)
    # defaults filled in as the CLI fills them
    assert icl.theory("eta-star") == cli_json("theory", "eta-star", "--json")


def test_theory_list_params_and_trajectory(cli, cli_json, tmp_path):
    # a list parameter (comma-separated on the command line)
    got = icl.theory("plateaus", eigs=[0.4, 0.3, 0.2, 0.1], N=31)
    assert got == cli_json("theory", "plateaus", "--eigs", "0.4,0.3,0.2,0.1", "--N", 31, "--json")
    np_got = icl.theory("plateaus", eigs=np.array([0.4, 0.3, 0.2, 0.1]), N=31)
    assert np_got == got
    # an ODE: the trajectory equals the CLI's CSV
    res = icl.theory("he2025-flow")
    path = tmp_path / "flow.csv"
    want = cli_json("theory", "he2025-flow", "--json", "--csv", path)
    traj = res.pop("trajectory")
    assert res == want
    with open(path) as f:
        rows = list(csv.reader(f))
    assert list(traj) == rows[0]
    for j, col in enumerate(rows[0]):
        np.testing.assert_array_equal(traj[col], [float(r[j]) for r in rows[1:]])


def test_theories_equal_cli(cli_json):
    got = icl.theories()
    assert got == cli_json("theory", "--list", "--json")
    assert any(q["name"] == "eta-star" for q in got)


def test_theory_sizes_beyond_the_budget_raise():
    # aborted the interpreter (SIGABRT on a 328 GB allocation) or ran without bound
    with pytest.raises(icl.InputError, match="too large.*L x d"):
        icl.theory("bayes-risk-mc", n=2, d=4096, L=10_000_000)
    with pytest.raises(icl.InputError, match="too large.*--t-end / --dt"):
        icl.theory("he2025-flow", t_end=1e308)
    with pytest.raises(icl.InputError, match="too large.*--sample-dt"):
        icl.theory("white-loss", t=1e300, sample_dt=1e-300)


def test_module_constants():
    assert icl.ENGINES[0] == icl.DEFAULT_ENGINE == "simd"
    assert set(icl.ENGINES) == {"simd", "scalar", "vulkan"}
    assert isinstance(icl.__version__, str)


def test_theory_run_equals_cli(tmp_path, cli, cli_json):
    # the temperature closed forms at a one-head softmax run's linearised layer
    # (docs/papers/temperature.md, "Temperature of a trained run"): a folder as str or path, or the Run itself
    cfg = icl.Config.preset("he2025-h1").set("task.L", 10)
    run = icl.train(cfg, steps=50, out=tmp_path / "h1", progress=False, eval_samples=0)
    want = cli_json("theory", "optimal-temperature", "--run", run.dir, "--json")
    assert want["run_keys"] == "context" and want["params"]["l"] == "11"
    for r in (run, run.dir, str(run.dir)):
        assert icl.theory("optimal-temperature", run=r) == want
    shifted = icl.theory("temperature-error", run=run, tau=2, test_sigma_x=2)
    assert shifted == cli_json(
        "theory", "temperature-error", "--run", run.dir, "--tau", 2, "--test-sigma-x", 2, "--json"
    )
    # refused as the CLI refuses them (exit 2 there)
    two = icl.train("quick", steps=5, out=tmp_path / "h2", progress=False, eval_samples=0)
    assert cli("theory", "optimal-temperature", "--run", two.dir, check=False).returncode == 2
    with pytest.raises(icl.InputError, match="2 heads"):
        icl.theory("optimal-temperature", run=two)
    with pytest.raises(icl.InputError, match="d = 5"):
        icl.theory("optimal-temperature", run=run, d=7)
    with pytest.raises(icl.RunNotFoundError):
        icl.theory("optimal-temperature", run=tmp_path / "nothing")
