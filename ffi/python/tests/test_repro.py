"""`icl.repro` is `icl repro ... --json`: the same report from the same run layer (one cheap
zhang2025 claim at smoke scale), the complete run skipped when called again, and bad options
refused before anything is written."""

import json

import pytest

import icl

CLAIM = "fig13-final"  # one run of about a second


def test_repro_equals_cli(tmp_path, cli_json):
    want = cli_json(
        "repro", "zhang2025", "--only", CLAIM, "--quiet", "--json", "--out", tmp_path / "cli"
    )
    got = icl.repro("zhang2025", tmp_path / "py", only=[CLAIM])
    assert [c["id"] for c in got["claims"]] == [CLAIM]
    # the claims are measured from the runs: the same numbers, the same verdicts
    assert got["claims"] == want["claims"]
    assert got["claims"][0]["pass"] is True
    assert [r["name"] for r in got["runs"]] == [r["name"] for r in want["runs"]] == ["fig13"]
    assert {k: got[k] for k in ("paper", "scale", "version", "machine")} == {
        k: want[k] for k in ("paper", "scale", "version", "machine")
    }
    # the dict is report.json, which the call wrote beside the run folder
    assert json.loads((tmp_path / "py" / "report.json").read_text()) == got
    assert (tmp_path / "py" / "runs" / "fig13" / "model.safetensors").is_file()
    assert (tmp_path / "py" / "report.md").is_file()


def test_repro_again_skips_the_complete_run(tmp_path, capsys):
    out = tmp_path / "r"
    first = icl.repro("zhang2025", str(out), only=CLAIM, scale="smoke", jobs=1, engine="simd")
    model = out / "runs" / "fig13" / "model.safetensors"
    stamp = model.stat().st_mtime_ns
    again = icl.repro("zhang2025", out, only=CLAIM, progress=True)
    assert again == first
    assert model.stat().st_mtime_ns == stamp
    assert "[1/1] skip  fig13" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"paper": "nosuch"}, icl.UnknownNameError),
        ({"scale": "huge"}, icl.InputError),
        ({"only": ["nosuch-claim"]}, icl.InputError),
        ({"only": "fig13-final,nosuch"}, icl.InputError),
        ({"jobs": 0}, icl.InputError),
        ({"jobs": 257}, icl.InputError),
        ({"jobs": -1}, icl.InputError),
        ({"engine": "SIMD"}, icl.UnknownNameError),
        ({"only": 3}, TypeError),
        ({"set": {"no.such_key": 1}}, icl.UnknownNameError),
        ({"set": {"train.steps": "many"}}, icl.InputError),
        ({"set": {"train.lr": float("nan")}}, icl.InputError),
        ({"set": {1: 2}}, TypeError),
    ],
)
def test_repro_refuses_bad_options_before_writing(tmp_path, kwargs, error):
    out = tmp_path / "bad"
    args = {"paper": "zhang2025", "only": [CLAIM], **kwargs}
    paper = args.pop("paper")
    with pytest.raises(error) as e:
        icl.repro(paper, out, **args)
    assert str(e.value)
    assert not out.exists()


def test_repro_into_a_file_is_refused_before_any_work(tmp_path):
    # refused with the options (as `icl repro --out FILE`, exit 2), the file untouched
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(icl.InputError) as e:
        icl.repro("zhang2025", f, only=[CLAIM])
    assert "is a file" in str(e.value), str(e.value)
    assert f.read_text() == "x"


def test_repro_set_overrides_every_run_and_is_reported(tmp_path, cli_json):
    out = tmp_path / "short"
    got = icl.repro("zhang2025", out, only=[CLAIM], set={"train.steps": 300, "train.seed": "5"})
    want = cli_json(
        "repro", "zhang2025", "--only", CLAIM, "--quiet", "--json",
        "--set", "train.steps=300", "--set", "train.seed=5", "--out", tmp_path / "cli",
    )
    assert got["set"] == want["set"] == {"train.steps": "300", "train.seed": "5"}
    assert got["claims"] == want["claims"]
    run = icl.load(out / "runs" / "fig13")
    assert run.config["train.steps"] == 300 and run.config["train.seed"] == 5
    assert run.step == 300
    # without overrides the report has no "set" and the run its preset's steps
    plain = icl.repro("zhang2025", tmp_path / "plain", only=[CLAIM])
    assert "set" not in plain
    assert icl.load(tmp_path / "plain" / "runs" / "fig13").config["train.steps"] != 300


def test_repro_calls_a_progress_callable(tmp_path):
    events = []
    out = tmp_path / "r"
    first = icl.repro("zhang2025", out, only=CLAIM, progress=lambda *a: events.append(a))
    assert events == [("fig13", 0, 1, "start"), ("fig13", 0, 1, "done")]
    events.clear()
    assert icl.repro("zhang2025", out, only=CLAIM, progress=lambda *a: events.append(a)) == first
    assert events == [("fig13", 0, 1, "skip")]

    def boom(*a):
        raise ValueError("from the callable")

    # it cannot stop the runs; its exception is raised when the work is done
    with pytest.raises(ValueError, match="from the callable"):
        icl.repro("zhang2025", tmp_path / "b", only=CLAIM, progress=boom)
    assert (tmp_path / "b" / "runs" / "fig13" / "model.safetensors").is_file()
