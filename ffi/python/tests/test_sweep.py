"""`icl.sweep_plan/run/status/collect` are `icl sweep plan|run|status|collect --json`: the same
plan, the same run folders and the same table bytes as the CLI for the same sweep file; a
second call skips complete runs; bad options are refused before anything trains; Ctrl-C
checkpoints the runs and a second call resumes them to the bytes of an uninterrupted sweep."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import icl

SWEEP = """
preset = "quick"
seeds = [1, 2]
[set]
"train.steps" = 60
"train.batch" = 8
[grid]
"model.heads" = [1, 2]
"""


def test_sweep_equals_cli(tmp_path, cli, cli_json):
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    plan = icl.sweep_plan(f, tmp_path / "py")
    assert plan == cli_json("sweep", "plan", f, "--out", tmp_path / "cli", "--json")
    assert [r["name"] for r in plan] == [
        "heads=1,seed=1",
        "heads=1,seed=2",
        "heads=2,seed=1",
        "heads=2,seed=2",
    ]
    assert {s["state"] for s in icl.sweep_status(tmp_path / "py")} == {"pending"}
    one = icl.sweep_run(tmp_path / "py", index=1, eval_samples=0)
    assert [(r["name"], r["status"], r["steps"]) for r in one] == [("heads=1,seed=2", "trained", 60)]
    got = icl.sweep_run(str(tmp_path / "py"), jobs=2, eval_samples=0)
    assert [r["status"] for r in got] == ["trained", "skipped", "trained", "trained"]
    want = cli_json("sweep", "run", tmp_path / "cli", "--eval-samples", "0", "--json")
    assert [r["name"] for r in got] == [r["name"] for r in want]
    states = icl.sweep_status(tmp_path / "py")
    assert [s["state"] for s in states] == ["complete"] * 4
    assert [s["steps"] for s in states] == [60] * 4
    table = icl.sweep_collect(tmp_path / "py")
    cli_table = cli_json("sweep", "collect", tmp_path / "cli", "--json")
    assert table["rows"] == cli_table["rows"] and table["columns"] == ["model.heads", "train.seed"]
    assert table["incomplete"] == []
    for name in ("results.csv", "results.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    # the run folders are the CLI's, bit for bit
    for r in plan:
        a = tmp_path / "py" / r["name"] / "model.safetensors"
        b = tmp_path / "cli" / r["name"] / "model.safetensors"
        assert a.read_bytes() == b.read_bytes()
    assert [r["status"] for r in icl.sweep_run(tmp_path / "py")] == ["skipped"] * 4


def test_progress_prints_a_line_per_run(tmp_path, capsys):
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    icl.sweep_plan(f, tmp_path / "sw")
    icl.sweep_run(tmp_path / "sw", index=0, eval_samples=0)
    capsys.readouterr()
    icl.sweep_run(tmp_path / "sw", jobs=2, eval_samples=0, progress=True)
    err = capsys.readouterr().err
    assert "heads=1,seed=1: skipped\n" in err and "heads=2,seed=2: trained\n" in err, err
    assert "step 60/60" in err, err
    icl.sweep_run(tmp_path / "sw", eval_samples=0)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"jobs": 257}, icl.InputError),
        ({"jobs": -1}, icl.InputError),
        ({"jobs": 1, "index": 0}, icl.InputError),
        ({"index": 4}, icl.InputError),
        ({"checkpoint_minutes": float("nan")}, icl.InputError),
        ({"engine": "cuda"}, icl.UnknownNameError),
    ],
)
def test_bad_options_train_nothing(tmp_path, kwargs, error):
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    icl.sweep_plan(f, tmp_path / "sw")
    with pytest.raises(error):
        icl.sweep_run(tmp_path / "sw", **kwargs)
    assert {s["state"] for s in icl.sweep_status(tmp_path / "sw")} == {"pending"}
    with pytest.raises(icl.InputError, match="not complete"):
        icl.sweep_collect(tmp_path / "sw")
    assert not (tmp_path / "sw" / "results.json").exists()
    part = icl.sweep_collect(tmp_path / "sw", partial=True)
    assert part["rows"] == [] and len(part["incomplete"]) == 4


def test_bad_files_and_folders(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(SWEEP.replace('"quick"', '"nosuch"'))
    with pytest.raises(icl.InputError, match="nosuch"):
        icl.sweep_plan(bad, tmp_path / "sw")
    assert not (tmp_path / "sw").exists()
    with pytest.raises(icl.InputError, match="is not a sweep folder"):
        icl.sweep_status(tmp_path / "nothing")
    with pytest.raises(icl.InputError, match="is not a sweep folder"):
        icl.sweep_run(tmp_path / "nothing")


SCRIPT = textwrap.dedent(
    """
    import sys, icl
    print("training", flush=True)
    try:
        icl.sweep_run(sys.argv[1], eval_samples=0, checkpoint_minutes=0)
    except KeyboardInterrupt as e:
        print("interrupted", e, flush=True)
        sys.exit(0)
    print("finished", flush=True)
    sys.exit(1)
    """
)


def test_ctrl_c_checkpoints_and_a_second_call_resumes_to_the_same_bytes(tmp_path):
    f = tmp_path / "sweep.toml"
    # one run long enough to interrupt (about 5 s at 1e5 steps/s), and the same run
    # uninterrupted for the bytes
    one = SWEEP.replace('"train.steps" = 60', '"train.steps" = 500000')
    f.write_text(one.replace("seeds = [1, 2]", "seeds = [1]").replace("[1, 2]\n", "[2]\n"))
    a, b = tmp_path / "a", tmp_path / "b"
    assert [r["name"] for r in icl.sweep_plan(f, a)] == ["heads=2,seed=1"]
    icl.sweep_plan(f, b)
    p = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(a)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout.readline().strip() == "training"
    # interrupt once the run has started (its staging folder exists) and trained a little
    stage = a / ".heads=2,seed=1.partial"
    t0 = time.monotonic()
    while not stage.is_dir() and time.monotonic() - t0 < 60:
        time.sleep(0.01)
    time.sleep(0.2)
    os.kill(p.pid, signal.SIGINT)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, (stdout, stderr)
    assert stdout.startswith("interrupted") and "sweep_run again" in stdout, stdout
    st = icl.sweep_status(a)
    assert st[0]["state"] == "interrupted" and 0 < st[0]["step"] < 500000, st
    got = icl.sweep_run(a, eval_samples=0)
    assert got[0]["status"] == "resumed" and got[0]["steps"] == 500000
    icl.sweep_run(b, eval_samples=0)
    name = got[0]["name"]
    assert (a / name / "model.safetensors").read_bytes() == (b / name / "model.safetensors").read_bytes()


def test_sweep_progress_callable_reports_and_stops(tmp_path):
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP)
    icl.sweep_plan(f, tmp_path / "ref")
    icl.sweep_plan(f, tmp_path / "s")
    # uninterrupted: every run reports its first and last step, its steps increasing
    seen = {}

    def record(i, step, total, loss):
        assert total == 60 and 1 <= step <= total and loss == loss
        assert step > seen.get(i, [0])[-1]
        seen.setdefault(i, []).append(step)

    icl.sweep_run(tmp_path / "ref", eval_samples=0, progress=record)
    assert sorted(seen) == [0, 1, 2, 3]
    assert all(s[0] == 1 and s[-1] == 60 for s in seen.values())

    # an exception from the callable stops the sweep (run 0 checkpointed at step 1) and is raised
    class Stop(Exception):
        pass

    def stop(i, step, total, loss):
        raise Stop()

    with pytest.raises(Stop):
        icl.sweep_run(tmp_path / "s", eval_samples=0, progress=stop)
    states = icl.sweep_status(tmp_path / "s")
    assert states[0]["state"] == "interrupted" and states[0]["step"] == 1
    assert [s["state"] for s in states[1:]] == ["pending"] * 3
    # a second call resumes it, to the bytes of the uninterrupted sweep
    got = icl.sweep_run(tmp_path / "s", eval_samples=0)
    assert [r["status"] for r in got] == ["resumed", "trained", "trained", "trained"]
    for r in got:
        a = tmp_path / "s" / r["name"] / "model.safetensors"
        assert a.read_bytes() == (tmp_path / "ref" / r["name"] / "model.safetensors").read_bytes()
