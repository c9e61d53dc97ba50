"""Errors: typed exceptions of the icl.Error hierarchy carrying the library's message (the text
the CLI prints after `icl: error: `), and numpy inputs checked for dtype, shape and layout."""

import errno

import numpy as np
import pytest

import icl


def cli_message(cli, *args):
    p = cli(*args, check=False)
    assert p.returncode == 2, p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("icl: error: ")
    return line[len("icl: error: "):]


def test_hierarchy():
    assert issubclass(icl.InputError, icl.Error) and issubclass(icl.InputError, ValueError)
    for c in (icl.UnknownNameError, icl.ShapeError, icl.CorruptFileError):
        assert issubclass(c, icl.InputError)
    assert issubclass(icl.FileError, OSError)
    assert issubclass(icl.RunNotFoundError, FileNotFoundError)
    assert issubclass(icl.RunNotFoundError, icl.FileError)
    assert issubclass(icl.NumericalError, ArithmeticError)
    assert issubclass(icl.EngineError, RuntimeError)
    assert icl.Error.__module__ == "icl"


def test_unknown_preset(cli):
    with pytest.raises(icl.UnknownNameError) as e:
        icl.Config.preset("nope")
    assert str(e.value) == cli_message(cli, "train", "--preset", "nope", "--out", "x")
    with pytest.raises(ValueError):
        icl.train("nope", progress=False)


def test_unknown_key_suggests(cli):
    cfg = icl.Config.preset("quick")
    with pytest.raises(icl.UnknownNameError) as e:
        cfg.set("model.head", 3)
    assert "did you mean model.heads?" in str(e.value)
    assert str(e.value) == cli_message(
        cli, "train", "--preset", "quick", "--set", "model.head=3", "--out", "x"
    )
    with pytest.raises(icl.UnknownNameError):
        cfg["nosuch.key"]


def test_out_of_range_value_leaves_config_unchanged(cli):
    cfg = icl.Config.preset("quick")
    before = cfg.to_toml()
    with pytest.raises(icl.InputError) as e:
        cfg.set("task.d", 0)
    assert str(e.value) == cli_message(
        cli, "train", "--preset", "quick", "--set", "task.d=0", "--out", "x"
    )
    with pytest.raises(icl.InputError):
        cfg["task.sigma2"] = float("nan")
    with pytest.raises(icl.InputError):
        cfg.set("train.optimizer", "gd")
    assert cfg.to_toml() == before


def test_bad_value_types():
    cfg = icl.Config()
    with pytest.raises(TypeError):
        cfg.set("task.d", object())
    with pytest.raises(TypeError):
        cfg.set("task.d", {"a": 1})
    with pytest.raises(icl.InputError):
        cfg.set("task.d", 2**70)
    with pytest.raises(TypeError):
        icl.train(42, progress=False)


def test_bad_toml():
    with pytest.raises(icl.InputError):
        icl.Config.from_toml("[task\nd = 5")
    with pytest.raises(icl.UnknownNameError):
        icl.Config.from_toml("[tsk]\nd = 5")


def test_missing_and_corrupt_run_folders(tmp_path, cli, runs):
    with pytest.raises(icl.RunNotFoundError) as e:
        icl.load(tmp_path / "nothere")
    assert isinstance(e.value, FileNotFoundError)
    assert str(e.value) == cli_message(cli, "eval", tmp_path / "nothere")
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in ("config.toml", "summary.json", "metrics.csv"):
        (bad / f).write_bytes((runs["cli"] / f).read_bytes())
    (bad / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    with pytest.raises(icl.CorruptFileError) as e:
        icl.load(bad)
    assert str(e.value) == cli_message(cli, "eval", bad)


def test_existing_run_needs_force(tmp_path, cli):
    out = tmp_path / "r"
    icl.train("quick", steps=10, out=out, progress=False, eval_samples=0)
    with pytest.raises(icl.InputError) as e:
        icl.train("quick", steps=10, out=out, progress=False, eval_samples=0)
    assert str(e.value) == cli_message(
        cli, "train", "--preset", "quick", "--steps", 10, "--out", out, "-q"
    )
    assert icl.train("quick", steps=12, out=out, force=True, progress=False, eval_samples=0).step == 12


def test_os_error_is_file_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(icl.FileError) as e:
        icl.train("quick", steps=5, out=blocker / "sub" / "run", progress=False)
    assert isinstance(e.value, OSError) and e.value.errno == errno.ENOTDIR
    assert str(blocker) in str(e.value)


def test_unknown_engine(cli):
    with pytest.raises(icl.UnknownNameError) as e:
        icl.train("quick", steps=5, engine="nope", progress=False)
    assert str(e.value) == cli_message(
        cli, "train", "--preset", "quick", "--engine", "nope", "--out", "x"
    )


def test_diverged_training_is_numerical_error(tmp_path):
    cfg = icl.Config.preset("quick").set("train.optimizer", "sgd").set("train.lr", 1e30)
    with pytest.raises(icl.NumericalError) as e:
        icl.train(cfg, out=tmp_path / "d", progress=False)
    assert isinstance(e.value, ArithmeticError)
    assert str(e.value) == "numerical failure: training diverged at step 1 (loss NaN)"
    assert not (tmp_path / "d").exists()


def test_eval_arguments(runs):
    with pytest.raises(icl.InputError, match="at least 2 samples"):
        runs["py"].eval(lengths=[10], samples=1)
    with pytest.raises(icl.InputError, match="no test lengths"):
        runs["py"].eval(lengths=[], samples=10)
    with pytest.raises(icl.InputError, match="not a positive integer"):
        runs["py"].eval(lengths=[0], samples=10)
    with pytest.raises(TypeError):
        runs["py"].eval(lengths="10,20", samples=10)


def test_theory_errors(cli):
    with pytest.raises(icl.UnknownNameError) as e:
        icl.theory("nope")
    assert str(e.value) == cli_message(cli, "theory", "nope")
    with pytest.raises(icl.InputError) as e:
        icl.theory("eta-star", d=0)
    assert str(e.value) == cli_message(cli, "theory", "eta-star", "--d", 0)
    with pytest.raises(icl.InputError, match="unknown parameter"):
        icl.theory("eta-star", dd=3)
    with pytest.raises(TypeError):
        icl.theory("eta-star", d=object())


def test_sample_arguments():
    with pytest.raises(icl.InputError, match="domain"):
        icl.sample("quick", 2, domain="test")
    with pytest.raises(icl.ShapeError):
        icl.sample("quick", 0)
    with pytest.raises(icl.ShapeError):
        icl.sample("quick", 2, 0)


# ---------------------------------------------------------------------------------------------
# numpy inputs of predict


@pytest.fixture(scope="module")
def z(runs):
    z, _ = icl.sample("quick", 4, 10)
    return z


def test_predict_not_an_array(runs, z):
    with pytest.raises(TypeError, match="numpy array"):
        runs["py"].predict(z.tolist())


@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.complex128, np.bool_, object])
def test_predict_dtype(runs, z, dtype):
    with pytest.raises(TypeError, match="float64 or float32"):
        runs["py"].predict(z.astype(dtype))


@pytest.mark.parametrize(
    "shape", [(4, 11, 5), (4, 11, 7), (4, 1, 6), (0, 11, 6), (66,), (2, 4, 11, 6), ()]
)
def test_predict_shape(runs, shape):
    with pytest.raises(icl.ShapeError):
        runs["py"].predict(np.zeros(shape))


def test_predict_layout(runs, z):
    with pytest.raises(icl.ShapeError, match="C-contiguous"):
        runs["py"].predict(z[::2])
    with pytest.raises(icl.ShapeError, match="C-contiguous"):
        runs["py"].predict(np.asfortranarray(z))
    wide = np.zeros((4, 11, 12))
    wide[:, :, :6] = z
    with pytest.raises(icl.ShapeError, match="C-contiguous"):
        runs["py"].predict(wide[:, :, :6])
    # the fix the message names works
    np.testing.assert_array_equal(
        runs["py"].predict(np.ascontiguousarray(z[::2])), runs["py"].predict(z)[::2]
    )


def test_predict_non_finite(runs, z):
    for bad in (np.nan, np.inf):
        z2 = z.copy()
        z2[1, 3, 2] = bad
        with pytest.raises(icl.InputError, match="not finite"):
            runs["py"].predict(z2)
    z2 = z.copy()
    z2[0, 0, 0] = 1e300  # overflows the f32 model
    with pytest.raises(icl.InputError):
        runs["py"].predict(z2)


def test_predict_read_only_input(runs, z):
    z2 = z.copy()
    z2.flags.writeable = False
    np.testing.assert_array_equal(runs["py"].predict(z2), runs["py"].predict(z))


def test_predict_unknown_engine(runs, z):
    with pytest.raises(icl.UnknownNameError):
        runs["py"].predict(z, engine="nope")


# ---------------------------------------------------------------------------------------------
# the contract audit


def test_negative_and_huge_integers_are_input_errors(runs):
    """Counts, lengths, steps and seeds out of range raise icl.InputError (a ValueError), not
    Python's OverflowError: everything icl raises derives from icl.Error."""
    calls = [
        lambda: icl.sample("quick", -1),
        lambda: icl.sample("quick", 2, -1),
        lambda: icl.sample("quick", 2, seed=-1),
        lambda: icl.sample("quick", 2, step=2**70),
        lambda: icl.train("quick", steps=-1, progress=False),
        lambda: icl.train("quick", seed=-1, progress=False),
        lambda: icl.train("quick", checkpoint_every=-1, progress=False),
        lambda: icl.train("quick", eval_samples=-5, progress=False),
        lambda: icl.resume("nowhere", steps=-1, progress=False),
        lambda: runs["py"].eval(lengths=[-1]),
        lambda: runs["py"].eval(lengths=[10], samples=-2),
        lambda: runs["py"].eval(lengths=[10], seed=2**64),
        lambda: icl.sweep_run("nowhere", jobs=2**70),
        lambda: icl.repro("zhang2025", "nowhere", jobs=-2**70),
    ]
    for call in calls:
        with pytest.raises(icl.InputError) as e:
            call()
        assert not isinstance(e.value, OverflowError)
        # integer arguments out of the C range name the range; test lengths go through the
        # one parser every front end shares, which names what a length must be
        assert "outside" in str(e.value) or "not a positive integer" in str(e.value)


def test_run_not_found_has_errno(tmp_path):
    with pytest.raises(icl.RunNotFoundError) as e:
        icl.load(tmp_path / "nothere")
    assert e.value.errno == errno.ENOENT
    assert "nothere" in str(e.value) and not str(e.value).startswith("[Errno")


def test_predict_ignores_the_query_y_slot(runs, z):
    """The query's y-slots are ignored whatever they hold, NaN included (as in C)."""
    want = runs["py"].predict(z)
    for v in (np.nan, np.inf, 1e300, 5.0):
        z2 = z.copy()
        z2[:, -1, 5:] = v
        np.testing.assert_array_equal(runs["py"].predict(z2), want)


def test_theory_overflow_is_numerical_error(cli):
    with pytest.raises(icl.NumericalError) as e:
        icl.theory("ols-risk", sigma2=1e308, d=1, L=3)
    assert str(e.value) == cli_message(
        cli, "theory", "ols-risk", "--sigma2", "1e308", "--d", 1, "--L", 3
    )
    assert "not finite" in str(e.value)


def test_refused_resume_writes_nothing(tmp_path, cli):
    with pytest.raises(icl.InputError) as e:
        icl.resume(tmp_path / "missing", progress=False)
    assert str(e.value) == cli_message(cli, "train", "--resume", tmp_path / "missing")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    out = tmp_path / "r"
    icl.train("quick", steps=5, out=out, progress=False, eval_samples=0)
    with pytest.raises(icl.InputError):
        icl.resume(out, steps=3, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
