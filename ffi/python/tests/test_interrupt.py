"""Long calls: the GIL is released while training, Ctrl-C (SIGINT) interrupts within a fraction
of a second and leaves a checkpoint that icl.resume continues, progress reports."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import icl


def test_gil_released_while_training(tmp_path):
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    t0 = time.perf_counter()
    icl.train("quick", steps=60_000, out=tmp_path / "r", progress=False, eval_samples=0)
    t1 = time.perf_counter()
    stop.set()
    t.join()
    during = [x for x in ticks if t0 < x < t1]
    # the other thread ran all along (a held GIL would stop it for the whole run): it ticks about
    # once a millisecond, so it must have ticked for a good part of the run however fast training
    # is on this machine
    assert t1 - t0 > 0.2
    assert len(during) > 0.2 * (t1 - t0) / 0.001, (len(during), t1 - t0)
    gaps = [b - a for a, b in zip(during, during[1:])]
    assert max(gaps) < 0.5, max(gaps)


def test_progress_callback(tmp_path):
    seen = []
    icl.train(
        "quick",
        steps=3000,
        out=tmp_path / "r",
        progress=lambda step, total, loss: seen.append((step, total, loss)),
        eval_samples=0,
    )
    assert seen and seen[-1][:2] == (3000, 3000)
    assert all(t == 3000 for _, t, _ in seen) and all(loss > 0 for *_, loss in seen)
    assert [s for s, *_ in seen] == sorted(s for s, *_ in seen)


def test_progress_line_on_stderr(tmp_path, capsys):
    icl.train("quick", steps=200, out=tmp_path / "r", eval_samples=0)
    err = capsys.readouterr().err
    assert "step 200/200" in err and "loss" in err and "eta 0:00:00" in err
    icl.train("quick", steps=200, out=tmp_path / "q", progress=False, eval_samples=0)
    assert capsys.readouterr().err == ""


def test_a_curriculum_run_says_its_schedule(tmp_path, capsys):
    cfg = icl.Config.preset("garg-linear-tiny")
    for k, v in [("task.d", 5), ("task.L", 10), ("model.positions", 11), ("model.layers", 1),
                 ("model.embd", 8), ("task.curriculum_d", 2), ("task.curriculum_L", 4),
                 ("task.curriculum_every", 300)]:
        cfg.set(k, v)
    icl.train(cfg, steps=3, out=tmp_path / "g", eval_samples=0)
    err = capsys.readouterr().err
    want = "curriculum: d 2 -> 5 (+1) and L 4 -> 10 (+2) every 300 steps; the full size (d = 5, L = 10) not reached: it starts at step 900"
    assert err.count(want) == 1, err
    assert "step 3/3" in err


class Stop(Exception):
    pass


def test_callback_exception_stops_and_checkpoints(tmp_path):
    out = tmp_path / "r"
    stopped = []

    def cb(step, total, loss):
        if step >= 500:
            stopped.append(step)
            raise Stop()

    with pytest.raises(Stop):
        icl.train("quick", steps=100_000, out=out, progress=cb, eval_samples=0)
    assert not out.exists()
    assert (tmp_path / ".r.partial" / "checkpoint.safetensors").is_file()
    # the checkpoint is at the step the callback stopped: resume continues from there
    run = icl.resume(out, steps=stopped[0] + 200, progress=False, eval_samples=0)
    assert run.step == stopped[0] + 200 and run.summary["resumed_from"] == stopped[0]


SCRIPT = textwrap.dedent(
    """
    import sys, time, icl
    out = sys.argv[1]
    print("training", flush=True)
    t0 = time.perf_counter()
    try:
        icl.train("he2025", steps=10_000_000, out=out, progress=False, eval_samples=0)
    except KeyboardInterrupt as e:
        print("interrupted", time.perf_counter(), e, flush=True)
        sys.exit(0)
    print("finished", flush=True)
    sys.exit(1)
    """
)


def test_ctrl_c_interrupts_and_resume_continues(tmp_path):
    out = tmp_path / "run"
    p = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "training"
    time.sleep(2.0)
    sent = time.perf_counter()
    os.kill(p.pid, signal.SIGINT)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, stderr
    word, when, *msg = stdout.split(maxsplit=2)
    assert word == "interrupted", stdout
    # perf_counter is system-wide (CLOCK_MONOTONIC) on Linux
    assert float(when) - sent < 1.0
    assert "checkpointed" in msg[0] and "icl.resume" in msg[0]
    step = int(msg[0].split("interrupted at step ")[1].split(";")[0])
    assert step > 0
    assert (tmp_path / ".run.partial" / "checkpoint.safetensors").is_file()
    run = icl.resume(out, steps=step + 100, progress=False, eval_samples=0)
    assert run.step == step + 100 and run.summary["resumed_from"] == step
