"""The exceptions icl raises: one hierarchy under ``icl.Error``, each also a standard Python
exception (``ValueError``, ``OSError``, ...), so ``except ValueError`` works as expected.

``str(e)`` is the library's message, the same text the ``icl`` CLI prints after ``icl: error:``.
"""


class Error(Exception):
    """Base class of every error icl raises."""


class InputError(Error, ValueError):
    """Bad input: a configuration value out of range, a rule between keys broken, a bad argument,
    a non-finite value, an option combination that is not supported, a request that cannot be
    carried out as asked (an existing run folder without ``force=True``, ...), a size beyond the
    budget (more memory than 16 GiB or than is available, more than 10^8 samples)."""


class UnknownNameError(InputError):
    """An unknown name: preset, configuration key, engine or theory quantity. The message
    suggests the closest known name where there is one."""


class ShapeError(InputError):
    """An array of the wrong shape or memory layout (not C-contiguous)."""


class CorruptFileError(InputError):
    """A file that exists but cannot be decoded as what icl expects (a checkpoint, a config)."""


class FileError(Error, OSError):
    """The operating system refused (permissions, a full disk, ...). ``errno`` is set when the
    system gave one."""


class RunNotFoundError(FileError, FileNotFoundError):
    """A run folder, or a file in it, does not exist."""


class NumericalError(Error, ArithmeticError):
    """A numerical failure: training diverged, a singular matrix, a covariance that is not
    positive definite."""


class EngineError(Error, RuntimeError):
    """An engine failed at run time (no Vulkan device, a driver error)."""


for _cls in (
    Error,
    InputError,
    UnknownNameError,
    ShapeError,
    CorruptFileError,
    FileError,
    RunNotFoundError,
    NumericalError,
    EngineError,
):
    _cls.__module__ = "icl"
del _cls

__all__ = [
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
