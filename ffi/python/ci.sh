#!/usr/bin/env bash
# The Python package's CI: build the wheel (maturin, from PyPI) in a fresh venv, install it, and
# run its pytest suite against the `icl` CLI built from the same tree.
# Usage: [ICL=path/to/icl] bash ffi/python/ci.sh   (from anywhere; uses target/pyvenv and
# target/wheels)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/pyvenv
python3 -m venv --clear "$venv"
# tensorboard (pinned) reads the run folders' event files back in test_tensorboard.py
"$venv/bin/python" -m pip install -q --disable-pip-version-check maturin numpy pytest pandas matplotlib mypy \
  tensorboard==2.21.0
rm -f target/wheels/icl-*.whl
# With $ICL (CI, after `cargo test --workspace`): a dev-profile wheel, which reuses that build of
# every crate below the extension (the dev profile is the test profile's, and core/run/Cargo.toml
# turns on the features a workspace build has), so only the extension's crate and PyO3 compile.
# Without: a release wheel.
if [ -n "${ICL:-}" ]; then profile=(--profile dev); else profile=(--release); fi
"$venv/bin/maturin" build "${profile[@]}" --locked -m ffi/python/Cargo.toml -o target/wheels \
  --interpreter "$venv/bin/python"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps target/wheels/icl-*.whl
# the CLI to compare against: $ICL when given (.ci/run passes the one `cargo test` built, whose
# test profile is optimised: a second release build of the whole tree would cost minutes, and
# every build gives the same bits), else a release build
if [ -n "${ICL:-}" ]; then
  cli="$(realpath "$ICL")"
else
  cargo build --release --locked -p icl-cli
  cli="$PWD/target/release/icl"
fi
# run from the tests folder so that `import icl` is the installed wheel, not the source tree
cd ffi/python/tests
ICL_CLI="$cli" "$OLDPWD/$venv/bin/python" -m pytest -q -p no:cacheprovider .
# the type stubs match the extension (names, signatures, defaults)
"$OLDPWD/$venv/bin/python" -m mypy.stubtest icl._icl
