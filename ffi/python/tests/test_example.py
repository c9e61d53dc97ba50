"""examples/python/he2025.py runs (quick preset) and writes its figure."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "examples" / "python" / "he2025.py"


def test_he2025_example_quick(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "quick.png"
    p = subprocess.run(
        [sys.executable, str(EXAMPLE), "--preset", "quick", "--steps", "500",
         "--out", str(tmp_path / "run"), "--png", str(png), "--samples", "200"],
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "head 0: omega" in p.stdout and "model " in p.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
