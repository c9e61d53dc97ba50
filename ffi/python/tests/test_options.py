"""The options schema from Python: every option of every entry point (``icl.options``, read from
the run layer's structs) is a keyword of its Python function, and the ``icl`` CLI's ``--help``
lists its flag. A field added to a struct and not reachable from Python fails here; the C side is
checked by ``tests/tests/ffi_options.rs``."""

import pytest

import icl

SAMPLES = {
    "bool": True,
    "int": 3,
    "float": 0.5,
    "text": "1",
    "list": [1, 2],
    "items": {"k": "1"},
}


def _calls(runs, tmp_path):
    """Per entry point: a call with keyword options that fails (or ends) quickly after they are
    read, and the CLI commands whose help lists its flags."""
    return {
        "train": (lambda **kw: icl.train("no-such-preset", progress=False, **kw), [["train"]]),
        "eval": (
            lambda **kw: runs["py"].eval(as_frame=False, **{"samples": 3, "lengths": [2], **kw}),
            [["eval"]],
        ),
        "repro": (lambda **kw: icl.repro("no-such-paper", tmp_path / "r", **kw), [["repro"]]),
        "sweep_run": (
            lambda **kw: icl.sweep_run(tmp_path / "no-sweep", **kw),
            [["sweep", "run"], ["sweep", "run-one"]],
        ),
    }


@pytest.mark.parametrize("name", ["train", "eval", "repro", "sweep_run"])
def test_every_option_is_a_keyword_and_a_flag(runs, cli, tmp_path, name):
    call, commands = _calls(runs, tmp_path)[name]
    help_text = "".join(cli(*c, "--help").stdout for c in commands)
    fields = icl.options(name)
    assert fields
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_option'"):
        call(no_such_option=1)
    for f in fields:
        flag = "--" + f["name"].replace("_", "-")
        assert flag + " " in help_text or flag + "\n" in help_text, (name, flag)
        try:
            call(**{f["name"]: SAMPLES[f["kind"]]})
        except icl.Error:
            pass  # taken, then refused for what it means here (not a TypeError)


def test_options_lists_defaults_and_help():
    ev = {f["name"]: f for f in icl.options("eval")}
    assert ev["samples"]["default"] == 20000 and ev["samples"]["kind"] == "int"
    assert ev["lengths"]["default"] == "10,20,40,100" and ev["lengths"]["kind"] == "list"
    assert ev["shift"]["kind"] == "items" and ev["ref"]["flag"] == "--ref"
    assert ev["tau_holdout"]["help"]
    with pytest.raises(icl.UnknownNameError):
        icl.options("nope")
