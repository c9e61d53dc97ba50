"""Type stubs of the extension module ``icl._icl`` (re-exported by ``icl``)."""

from os import PathLike
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "Config",
    "Run",
    "DEFAULT_ENGINE",
    "ENGINES",
    "load",
    "options",
    "presets",
    "repro",
    "resume",
    "sample",
    "sweep_collect",
    "sweep_plan",
    "sweep_run",
    "sweep_status",
    "theories",
    "theory",
    "train",
    "__version__",
]

__version__: str
ENGINES: Tuple[str, ...]
"""Engines built in, fastest first: ``("simd", "scalar", "vulkan")``."""
DEFAULT_ENGINE: str
"""The default engine (the fastest built in)."""

_Value = Union[bool, int, float, str, Sequence[Union[bool, int, float, str]], npt.NDArray[Any]]
_Path = Union[str, PathLike]
_Progress = Union[bool, Callable[[int, int, float], Any]]
_ReproProgress = Union[bool, Callable[[str, int, int, str], Any]]
_SweepProgress = Union[bool, Callable[[int, int, int, float], Any]]
_Rows = Any  # pandas.DataFrame if pandas is installed, else List[Dict[str, Any]]

@final
class Config:
    """A run configuration: every key of ``[task]``, ``[model]`` and ``[train]``
    (``Config.keys()`` lists them), range-checked when it is set."""

    def __new__(cls) -> "Config":
        """The defaults (the he2025 setting: d = 5, L = 40, sigma2 = 0.1, two heads)."""
    @staticmethod
    def preset(name: str) -> "Config":
        """The named preset (``icl.presets()`` lists them). Raises ``icl.UnknownNameError``."""
    @staticmethod
    def from_toml(text: str) -> "Config":
        """A TOML text (``[task]``, ``[model]``, ``[train]``) on top of the defaults, validated."""
    @staticmethod
    def load(path: _Path) -> "Config":
        """A ``config.toml`` file, as ``icl train --config FILE`` reads it."""
    @staticmethod
    def keys() -> List[Dict[str, Any]]:
        """Every key: ``[{"key", "aliases", "doc", "accepts"}]``."""
    def set(self, key: str, value: _Value) -> "Config":
        """Set ``key`` (e.g. ``"model.heads"``) in place and return this config (calls chain).
        Text is read as ``icl train --set key=TEXT`` reads it. Raises ``icl.InputError`` or
        ``icl.UnknownNameError`` (the config is then unchanged)."""
    def get(self, key: str) -> Any:
        """The value of ``key``."""
    def __getitem__(self, key: str, /) -> Any: ...
    def __setitem__(self, key: str, value: _Value, /) -> None: ...
    def validate(self) -> None:
        """Check the rules between keys. Raises ``icl.InputError``."""
    def to_toml(self) -> str:
        """The config as TOML text (reads back with ``Config.from_toml``, floats bit for bit)."""
    def to_dict(self) -> Dict[str, Any]:
        """Dotted key -> value (as in ``summary.json``)."""
    @property
    def preset_name(self) -> Optional[str]:
        """The preset this config started from, if any."""
    def copy(self) -> "Config": ...
    def __copy__(self) -> "Config": ...
    def __deepcopy__(self, memo: Any) -> "Config": ...
    def __eq__(self, other: object, /) -> bool: ...

@final
class Run:
    """A finished run folder with its model loaded."""

    def __new__(cls, dir: _Path) -> "Run":
        """Open the run folder ``dir`` (same as ``icl.load(dir)``)."""
    @property
    def dir(self) -> Path:
        """The run folder."""
    def __fspath__(self) -> str:
        """The run folder as text: a run is a path (``os.fspath(run)``, ``icl.theory(..., run=run)``)."""
    @property
    def config(self) -> Config:
        """The run's configuration (a copy)."""
    @property
    def step(self) -> int:
        """Optimiser steps behind the model."""
    @property
    def dtype(self) -> str:
        """Compute precision of the model: ``"f32"`` or ``"f64"``."""
    @property
    def summary(self) -> Dict[str, Any]:
        """``summary.json`` as a dict."""
    def metrics(self, as_frame: Optional[bool] = None) -> Union[_Rows, Dict[str, npt.NDArray[np.float64]]]:
        """The training log (``metrics.csv``): ``step``, ``loss``, ``omega_h``, ``mu_h``, ...;
        a DataFrame when pandas is installed (unless ``as_frame=False``), else a dict of arrays."""
    def analyze(self, plot: bool = False) -> Dict[str, Any]:
        """The dict ``icl analyze --json`` prints; ``plot=True`` also writes ``circuits.svg``
        (``attention.svg`` for a GPT-2 run: every layer's and head's attention on one prompt)."""
    def plot(self) -> List[str]:
        """Draw the training figures again as ``icl plot DIR`` does (``loss.svg``,
        ``omega_mu.svg``, ``pattern.svg``, ...); the folder's figure files by name."""
    def circuits(self) -> Dict[str, npt.NDArray[np.float64]]:
        """``{"kq": (H, E, E), "ov": (H, n_out, E), "omega": (H,), "mu": (H, n_out)}``."""
    def params(self) -> Dict[str, npt.NDArray[np.float64]]:
        """The parameters in the checkpoint layout (``q_proj.weight``, ...)."""
    def eval(
        self,
        *,
        as_frame: Optional[bool] = None,
        plot: Optional[str] = None,
        lengths: Sequence[int] = ...,
        samples: int = ...,
        seed: int = ...,
        engine: Optional[str] = ...,
        tau: Optional[Union[str, Sequence[Union[float, str]]]] = ...,
        shift: Optional[Dict[str, Any]] = ...,
        tau_holdout: Optional[int] = ...,
        **options: Any,
    ) -> _Rows:
        """Rows ``{"estimator", "L", "risk", "stderr", "tau", "shift"}`` as ``icl eval --json``
        computes them (default lengths 10, 20, 40, 100); ``tau=[0.5, 1, "opt"]`` evaluates the
        model with its attention logits divided by tau (``"opt"``: chosen on held-out data),
        ``shift={"x_cov": 3, "x_mean": "2e1"}`` shifts the test data. A DataFrame when pandas
        is installed (unless ``as_frame=False``), else a list of dicts. ``plot="risk.png"``
        also draws the risks against L' with error bars (``.svg`` or ``.png``). The options are
        ``icl eval``'s flags with its defaults (``icl.options("eval")`` lists them)."""
    def predict(self, z: npt.NDArray[Union[np.float64, np.float32]], engine: Optional[str] = None) -> npt.NDArray[np.float64]:
        """Predictions for token-major ``z`` of shape ``(n, L+1, E)`` (or ``(L+1, E)``),
        C-contiguous float64/float32; returns ``(n, n_out)`` (or ``(n_out,)``). Raises
        ``TypeError`` (not an array, wrong dtype), ``icl.ShapeError`` (shape, layout),
        ``icl.InputError`` (non-finite values)."""
    def predict_prompts(
        self,
        xs: npt.NDArray[Union[np.float64, np.float32]],
        ys: npt.NDArray[Union[np.float64, np.float32]],
        engine: Optional[str] = None,
    ) -> npt.NDArray[np.float64]:
        """Predictions on prompts ``xs`` ``(n, k, d)`` and ``ys`` ``(n, k)``: GPT-2 runs give
        ``(n, k)``, the prediction at every x position (Garg et al.'s output); other families
        ``(n, n_out)`` at the last x as the query. Raises ``icl.InputError`` (shapes, non-finite
        values), ``TypeError`` (not an array, wrong dtype)."""

def presets() -> Dict[str, str]:
    """``{name: description}`` of every preset."""

def train(
    config: Union[Config, str],
    *,
    out: Optional[_Path] = None,
    progress: _Progress = True,
    steps: Optional[int] = ...,
    seed: Optional[int] = ...,
    engine: Optional[str] = ...,
    force: bool = ...,
    eval_samples: int = ...,
    checkpoint_every: int = ...,
    checkpoint_minutes: float = ...,
    **options: Any,
) -> Run:
    """Train into the run folder ``out`` (a new temporary folder when ``None``) and return the
    finished ``Run``; the same folder ``icl train`` writes (same seed, same bytes). The GIL is
    released while training; Ctrl-C checkpoints the run and raises ``KeyboardInterrupt``
    (``icl.resume(out)`` continues it). The options are ``icl train``'s flags with its defaults
    (``icl.options("train")`` lists them)."""

def resume(
    dir: _Path,
    *,
    progress: _Progress = True,
    steps: Optional[int] = ...,
    engine: Optional[str] = ...,
    eval_samples: int = ...,
    checkpoint_every: int = ...,
    checkpoint_minutes: float = ...,
    **options: Any,
) -> Run:
    """Continue an interrupted run, or extend a finished one to ``steps``."""

def load(dir: _Path) -> Run:
    """Open a run folder. Raises ``icl.RunNotFoundError`` or ``icl.CorruptFileError``."""

def repro(
    paper: str,
    out: _Path,
    *,
    progress: _ReproProgress = False,
    scale: str = ...,
    only: Optional[Union[str, Sequence[str]]] = ...,
    jobs: int = ...,
    engine: Optional[str] = ...,
    set: Optional[Mapping[str, _Value]] = ...,
    **options: Any,
) -> Dict[str, Any]:
    """Reproduce ``paper`` (``"he2025"``, ``"zhang2025"``, ``"multilayer"``, ``"temperature"``)
    into ``out`` as ``icl repro PAPER --out OUT --json``: the runs the claims need under
    ``out/runs/`` (complete runs skipped, interrupted ones resumed), ``report.json``,
    ``report.md``, ``report.html`` and the figures; returns ``report.json`` as a dict
    (``"claims"``: id, measured, paper_value, tolerance, pass, ...). ``only``: claim ids (a list
    or a comma-separated str); ``jobs``: 1 to 256; ``set``: config overrides for every run the
    claims train (``{"train.steps": 50000}``, listed in the report under ``"set"``). Raises
    ``icl.UnknownNameError`` (paper, engine, ``set`` key) or ``icl.InputError`` (scale, claim
    id, jobs, a ``set`` value, ``out`` an existing file) before anything is written."""

def sweep_plan(file: _Path, out: _Path) -> List[Dict[str, Any]]:
    """Expand a sweep file (TOML: ``preset`` or ``config``, ``seeds``, ``[set]``, ``[grid]``) into
    the sweep folder ``out`` as ``icl sweep plan FILE --out OUT --json``; the planned runs
    (``index``, ``name``, ``values``, ``preset``/``config``, ``set``), the seed fastest. Raises
    ``icl.InputError`` (not a sweep file, or ``out`` holds another plan) before writing."""

def sweep_run(
    dir: _Path,
    *,
    progress: _SweepProgress = False,
    jobs: Optional[int] = ...,
    index: Optional[int] = ...,
    engine: Optional[str] = ...,
    eval_samples: int = ...,
    checkpoint_minutes: float = ...,
    checkpoint_every: int = ...,
    force: bool = ...,
    **options: Any,
) -> List[Dict[str, Any]]:
    """Train the sweep's runs not complete (interrupted ones resume) as ``icl sweep run DIR
    --json``: per run ``name``, ``status`` (``skipped``, ``trained``, ``resumed``), ``steps``,
    ``seconds``, ``steps_per_s``, ``wall_seconds``. ``jobs``: runs at once (default 1, 0: one per
    core); ``index``: only that run, not with ``jobs``. A failed run raises its error (naming the
    run) after the others were tried; Ctrl-C checkpoints and raises ``KeyboardInterrupt``."""

def sweep_status(dir: _Path) -> List[Dict[str, Any]]:
    """Per run ``index``, ``name``, ``state`` (``complete``, ``running``, ``interrupted``,
    ``pending``, ``damaged``) and its steps, checkpoint step or ``reason`` (damaged: the folder
    is not a readable complete run; ``sweep_run`` trains it again), as ``icl sweep status DIR
    --json``."""

def sweep_collect(dir: _Path, *, partial: bool = False) -> Dict[str, Any]:
    """Write ``results.csv``, ``results.json``, ``runs.csv`` and plots, as ``icl sweep collect DIR
    --json``; returns ``columns``, ``rows`` (run, grid values, seed, metric, value),
    ``incomplete`` and ``files``. Runs not complete raise ``icl.InputError`` unless ``partial``."""

def sample(
    config: Union[Config, str],
    n: int,
    L: Optional[int] = None,
    *,
    seed: Optional[int] = None,
    step: Optional[int] = None,
    domain: str = "train",
) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(z, y)`` of shapes ``(n, L+1, E)`` and ``(n, n_out)``: the training batch of ``step``
    (``domain="train"``) or ``icl eval``'s samples at length L (``domain="eval"``)."""

def theory(name: str, **params: Any) -> Dict[str, Any]:
    """A theory quantity: the dict ``icl theory NAME --json`` prints (``"value"``, extra outputs,
    ``"params"``), plus ``"trajectory"`` for ODE and simulator quantities. The temperature
    quantities take ``run=`` (a run folder as str or path, or an ``icl.Run``): the closed forms at
    that run's linearised softmax head, as ``icl theory ... --run DIR``."""

def theories() -> List[Dict[str, Any]]:
    """Every theory quantity with its parameters (``icl theory --list --json``)."""

def options(name: str) -> List[Dict[str, Any]]:
    """The keyword options of ``"train"``, ``"eval"``, ``"repro"`` or ``"sweep_run"``: per option
    ``name``, ``kind``, ``optional``, ``default``, ``flag`` (the ``icl`` flag), ``help``."""
