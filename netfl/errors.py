"""Errors that the command line reports as one line and exit code 2 (bad input), the
command line's exit codes, and the warnings a scenario can raise."""

from __future__ import annotations

import re
from dataclasses import dataclass

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
"""Exit codes: success; the run failed (a bug or runtime error; the run directory says so);
bad input (one line naming the file and key); interrupted by Ctrl-C."""
EXIT_TERMINATED = 143
"""Exit code of a run stopped by SIGTERM (128 + 15, as a shell reports it)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (``netfl simulate`` turns it into this exception, so the run stops
    as after Ctrl-C: the run directory is written with ``status: terminated``)."""


class NetflError(Exception):
    """Base class of errors caused by the user's input rather than by a bug."""


LIMITS_PAGE = "docs/limits.md"
"""What netfl does not model, and the nearest thing it does."""
NOT_MODELLED = re.compile(
    r"not (yet )?(supported|modell?ed|implemented)|unsupported|does not (support|model)"
    r"|for now|cannot model",
    re.IGNORECASE,
)
"""The words of a refusal that says netfl does not model something: such a
:class:`Problem` points to :data:`LIMITS_PAGE` (tests/test_limits.py keeps every refusal
in the code within these words)."""


def pointing_to_limits(message: str) -> str:
    """``message``, and where it says netfl does not model something, a pointer to the page
    that lists what it does not model."""
    if NOT_MODELLED.search(message) and LIMITS_PAGE not in message:
        return f"{message} (what netfl does not model, and the nearest it does: {LIMITS_PAGE})"
    return message


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a scenario: where (key, line, column) and what. A message that
    says netfl does not model something points to :data:`LIMITS_PAGE`."""

    key: str | None
    message: str
    line: int | None = None
    column: int | None = None
    source: str | None = None
    """Where this problem comes from when it differs from the error's (a ``--set``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", pointing_to_limits(self.message))

    def located(self, source: str | None) -> str:
        where = self.source or source or "<scenario>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        key = f"{self.key}: " if self.key else ""
        return f"{where}: {key}{self.message}"


class ScenarioError(NetflError):
    """A scenario file or override is invalid.

    ``str(error)`` is one line naming the source, the first offending key and what was
    expected; ``error.lines()`` lists every problem found.
    """

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        if not problems:
            raise ValueError("ScenarioError needs at least one problem")
        self.problems = problems
        self.source = source
        super().__init__(self._one_line())

    @classmethod
    def single(
        cls, key: str | None, message: str, source: str | None = None, **where: int | None
    ) -> ScenarioError:
        return cls([Problem(key, message, where.get("line"), where.get("column"))], source)

    def lines(self) -> list[str]:
        return [p.located(self.source) for p in self.problems]

    def _one_line(self) -> str:
        text = self.problems[0].located(self.source)
        more = len(self.problems) - 1
        if more:
            text += f" (and {more} more; `netfl validate` lists them all)"
        return text


class ScenarioWarning(UserWarning):
    """A scenario that runs but probably not as intended (names the key)."""


class RadioWarning(ScenarioWarning):
    """A scenario that runs but may not behave as intended (e.g. overloaded cell); a
    scenario warning, so the command line shows it as one line naming the key."""


class DatasetError(NetflError):
    """A dataset file is missing or malformed (names the path and the expected layout)."""


class RunDirectoryError(NetflError):
    """The output directory cannot be used (exists and is not empty, not a run, ...)."""


class DiskFullError(Exception):
    """The run directory's disk filled up (or a file reached the file-size limit) during a
    run: the run stopped, its ``summary.json`` says so (status ``failed``), the CLI prints
    one line and exits 1. The line says what was kept (``kept``: filled in once the run
    directory has been written with what fits) and what was not (``lost``)."""

    def __init__(self, run_dir: object, reason: str) -> None:
        super().__init__(run_dir, reason)
        self.run_dir, self.reason = run_dir, reason
        self.kept: list[str] = []
        self.lost: list[str] = []

    def __str__(self) -> str:
        text = f"{self.run_dir}: {self.reason}; the run stopped"
        if self.kept:
            text += f"; written: {', '.join(self.kept)}"
        if self.lost:
            text += f"; not written for lack of space: {', '.join(self.lost)}"
        return text


class Diverged(Exception):
    """The global model or a loss became non-finite (NaN or infinite): the run stopped at
    that round, its ``summary.json`` says ``status: diverged`` with the round
    (``diverged_round``) and the cause (``divergence``), the CLI prints one line and exits
    1. Not bad input: the scenario validated (``netfl validate`` warns where the settings
    are unstable by construction)."""

    def __init__(self, round: int, cause: str) -> None:
        self.round, self.cause = round, cause
        self.run_dir: str | None = None  # set once the run directory holds the run
        super().__init__(f"the run diverged at round {round}: {cause}")

    def __str__(self) -> str:
        text = f"the run diverged at round {self.round}: {self.cause}"
        if self.run_dir is not None:
            text += f"; {self.run_dir} holds the rounds until then (status diverged)"
        return text


class RunReadError(NetflError):
    """A run (or sweep) directory cannot be read: not a netfl run, or a corrupted file."""


class MissingDataError(NetflError, LookupError):
    """A run lacks the records an analysis needs (the message names what and why)."""
