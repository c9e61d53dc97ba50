"""Run.predict_prompts: Garg et al.'s GPT-2 predicts at every x position (the same numbers as
`icl predict`), causally; other families predict at the last x as Run.predict does."""

import json
import struct

import numpy as np
import pytest

import icl


def _write_safetensors(path, tensors):
    """A safetensors file (8-byte header length, JSON header, raw little-endian data)."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f8")
        header[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def _read_safetensors(path):
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F64", t
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a : 8 + n + b], dtype="<f8").reshape(t["shape"])
    return out


@pytest.fixture(scope="module")
def gpt2_run(tmp_path_factory):
    cfg = icl.Config.preset("garg-linear-tiny")
    for k, v in {
        "task.d": 3,
        "task.L": 6,
        "model.positions": 7,
        "model.embd": 16,
        "model.layers": 2,
    }.items():
        cfg.set(k, v)
    return icl.train(cfg, steps=20, seed=4, out=tmp_path_factory.mktemp("gpt2") / "run", progress=False)


def test_gpt2_predicts_at_every_position_as_the_cli(gpt2_run, cli, tmp_path):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 7, 3))
    ys = rng.standard_normal((4, 7))
    pred = gpt2_run.predict_prompts(xs, ys)
    assert pred.shape == (4, 7) and pred.dtype == np.float64
    assert np.isfinite(pred).all()
    # the CLI's `icl predict` on the same prompts: the same bits
    inp, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    _write_safetensors(inp, {"xs": xs, "ys": ys})
    cli("predict", gpt2_run.dir, "--input", inp, "--out", out)
    np.testing.assert_array_equal(_read_safetensors(out)["pred"], pred)
    # causal: the prediction at pair i reads pairs 0..i-1 and x_i only
    xs2, ys2 = xs.copy(), ys.copy()
    xs2[:, 5:] += 1.0
    ys2[:, 4:] -= 2.0
    pred2 = gpt2_run.predict_prompts(xs2, ys2)
    np.testing.assert_array_equal(pred2[:, :5], pred[:, :5])
    assert (pred2[:, 5:] != pred[:, 5:]).all()
    # float32 prompts give the same predictions as their float64 values
    np.testing.assert_array_equal(
        gpt2_run.predict_prompts(xs.astype(np.float32), ys.astype(np.float32)),
        gpt2_run.predict_prompts(xs.astype(np.float32).astype(np.float64), ys.astype(np.float32).astype(np.float64)),
    )


def test_gpt2_prompt_errors(gpt2_run):
    xs, ys = np.zeros((2, 7, 3)), np.zeros((2, 7))
    with pytest.raises(icl.Error):
        gpt2_run.predict_prompts(xs, ys[:, :6])  # k disagrees
    with pytest.raises(icl.Error):
        gpt2_run.predict_prompts(np.zeros((2, 8, 3)), np.zeros((2, 8)))  # beyond the positions
    with pytest.raises(icl.Error):
        gpt2_run.predict_prompts(np.zeros((2, 7, 4)), ys)  # d disagrees
    bad = xs.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(icl.InputError, match="not finite"):
        gpt2_run.predict_prompts(bad, ys)
    with pytest.raises(TypeError):
        gpt2_run.predict_prompts(xs.tolist(), ys)


def test_other_families_predict_at_the_last_x(runs):
    run = runs["py"]
    rng = np.random.default_rng(1)
    z = rng.standard_normal((3, 11, 6))
    xs = np.ascontiguousarray(z[:, :, :5])
    ys = np.ascontiguousarray(z[:, :, 5])
    pred = run.predict_prompts(xs, ys)
    assert pred.shape == (3, 1)
    np.testing.assert_array_equal(pred[:, 0], run.predict(z).reshape(3))
