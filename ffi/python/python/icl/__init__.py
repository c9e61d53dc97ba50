"""icl: in-context linear regression with attention models, from Python.

Train the small attention models of the papers, analyse their circuits, evaluate them against
the classical estimators and query the theory, with numpy arrays in and out. The same library
as the ``icl`` CLI and the C API: same presets, same seed, same numbers.

Quick start::

    import icl
    run = icl.train("quick", out="runs/quick")       # or icl.Config.preset("he2025").set(...)
    print(run.analyze()["heads"])                    # omega, mu, kind per head
    print(run.eval(lengths=[10, 40, 100], samples=5000))
    z, y = icl.sample(run.config, 8, domain="eval")
    yhat = run.predict(z)                            # (8, 1) float64
    report = icl.repro("zhang2025", "repro/zhang2025")  # a paper's claims, as icl repro
    icl.sweep_plan("sweep.toml", "sw")               # seeds x grids, as icl sweep plan|run|collect
    icl.sweep_run("sw", jobs=2)
    table = icl.sweep_collect("sw")["rows"]

Errors raise ``icl.Error`` subclasses (``icl.InputError`` is a ``ValueError``,
``icl.FileError`` an ``OSError``, ...) carrying the library's message.
"""

from ._errors import (
    CorruptFileError,
    EngineError,
    Error,
    FileError,
    InputError,
    NumericalError,
    RunNotFoundError,
    ShapeError,
    UnknownNameError,
)
from ._icl import (
    DEFAULT_ENGINE,
    ENGINES,
    Config,
    Run,
    __version__,
    load,
    options,
    presets,
    repro,
    resume,
    sample,
    sweep_collect,
    sweep_plan,
    sweep_run,
    sweep_status,
    theories,
    theory,
    train,
)

__all__ = [
    "Config",
    "Run",
    "train",
    "resume",
    "load",
    "repro",
    "sweep_plan",
    "sweep_run",
    "sweep_status",
    "sweep_collect",
    "presets",
    "sample",
    "theory",
    "theories",
    "options",
    "ENGINES",
    "DEFAULT_ENGINE",
    "__version__",
    "Error",
    "InputError",
    "UnknownNameError",
    "ShapeError",
    "CorruptFileError",
    "FileError",
    "RunNotFoundError",
    "NumericalError",
    "EngineError",
]
