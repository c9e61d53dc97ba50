"""A run's TensorBoard event files, read by TensorBoard itself: the scalars are metrics.csv's rows
(f32), a sweep's runs show side by side, and a resumed run's stream has every step once."""

import csv
import math

from tensorboard.backend.event_processing import event_file_loader, event_multiplexer
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def _metrics(run):
    with open(run / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [[float(x) for x in r] for r in rows[1:]]


def _same_f32(event, csv_value):
    if math.isnan(csv_value):
        return math.isnan(event)
    return abs(event - csv_value) <= 1e-6 * abs(csv_value) + 1e-38


def _train(cli, out, *extra):
    cli("train", "--preset", "quick", "--steps", 300, "--set", "train.log_every=10",
        "--eval-samples", 0, "-q", "--out", out, *extra)


def _check_scalars(run):
    """TensorBoard's scalars of `run` against its metrics.csv: the same steps, each once, and the
    same values in f32 (the loss as train/loss, a probe column c as <group>/c)."""
    header, rows = _metrics(run)
    acc = EventAccumulator(str(run))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    steps = [int(r[0]) for r in rows]
    loss = acc.Scalars("train/loss")
    assert [e.step for e in loss] == steps
    for e, r in zip(loss, rows):
        assert _same_f32(e.value, r[1]), (e, r)
    for k, name in enumerate(header[2:], start=2):
        (tag,) = [t for t in tags if t.split("/")[-1] == name and not t.startswith("train/")]
        got = acc.Scalars(tag)
        assert [e.step for e in got] == steps, tag
        for e, r in zip(got, rows):
            assert _same_f32(e.value, r[k]), (tag, e, r)
    assert {e.step for e in acc.Scalars("train/lr")} == set(steps)
    assert all(e.value > 0 for e in acc.Scalars("train/steps_per_second"))
    # every event file read raw: no step is written twice (the accumulator would hide a repeat)
    raw = []
    for f in sorted(run.glob("events.out.tfevents.*")):
        for ev in event_file_loader.EventFileLoader(str(f)).Load():
            if ev.HasField("summary"):
                raw.append(ev.step)
    assert raw == steps
    return acc


def test_events_are_the_metrics_rows(cli, tmp_path):
    run = tmp_path / "run"
    _train(cli, run)
    acc = _check_scalars(run)
    assert "omega/omega_0" in acc.Tags()["scalars"]
    assert "mu/mu_1" in acc.Tags()["scalars"]
    assert len(list(run.glob("events.out.tfevents.*"))) == 1


def test_a_sweep_shows_side_by_side_and_an_extended_run_continues(cli, tmp_path):
    runs = tmp_path / "runs"
    _train(cli, runs / "a")
    _train(cli, runs / "b", "--seed", 7)
    # extend a finished run: its stream goes on in a second file, no step repeated
    cli("train", "--resume", runs / "b", "--steps", 400, "--eval-samples", 0, "-q")
    mux = event_multiplexer.EventMultiplexer().AddRunsFromDirectory(str(runs))
    mux.Reload()
    assert sorted(mux.Runs()) == ["a", "b"]
    assert mux.Scalars("a", "train/loss")[-1].step == 300
    assert mux.Scalars("b", "train/loss")[-1].step == 400
    assert len(list((runs / "b").glob("events.out.tfevents.*"))) == 2
    _check_scalars(runs / "b")
