"""Shared fixtures: the `icl` CLI (the reference every Python result is compared with) and runs
of the `quick` preset trained once per session by the CLI and by Python with the same seed."""

import json
import os
import pathlib
import subprocess

import pytest

import icl

ROOT = pathlib.Path(__file__).resolve().parents[3]
SEED = 3


def _find_cli():
    env = os.environ.get("ICL_CLI")
    if env:
        return pathlib.Path(env)
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "icl"
        if p.is_file():
            return p
    return None


@pytest.fixture(scope="session")
def cli():
    """Run the `icl` CLI; returns (returncode, stdout, stderr)."""
    path = _find_cli()
    if path is None or not path.is_file():
        pytest.fail(
            "the icl CLI is needed for the comparisons: build it with "
            "`cargo build --release --locked -p icl-cli` or set ICL_CLI"
        )

    def run(*args, check=True):
        p = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"icl {' '.join(map(str, args))} failed: {p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    def run(*args):
        return json.loads(cli(*args).stdout)

    return run


@pytest.fixture(scope="session")
def runs(tmp_path_factory, cli):
    """The `quick` preset with seed SEED, trained by the CLI and by icl.train."""
    base = tmp_path_factory.mktemp("runs")
    cli("train", "--preset", "quick", "--seed", SEED, "--out", base / "cli", "-q")
    run = icl.train("quick", seed=SEED, out=base / "py", progress=False)
    return {"cli": base / "cli", "py": run}
