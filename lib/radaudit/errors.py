"""The errors a user can cause. Each message says what went wrong and what to do next."""


class RadauditError(Exception):
    """Base class: an error whose message is meant for the user, shown without a traceback by the CLI."""


class ParamsError(RadauditError, ValueError):
    """Bad parameters: an unknown key, a bad value, an unknown preset or experiment."""


class DatasetNotFoundError(RadauditError, FileNotFoundError):
    """A dataset was asked for but its files are not under the data root."""


class DataFormatError(RadauditError, ValueError):
    """A dataset's files exist but do not have the documented format."""


class RunFailedError(RadauditError, RuntimeError):
    """A notebook run failed; its partial outputs and manifest are kept."""


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by SIGTERM or SIGINT, its manifest already marked ``interrupted`` (:mod:`radaudit.run`).

    A ``KeyboardInterrupt``, so whatever stops on Ctrl-C stops on it too; ``radaudit run`` exits with
    :attr:`exit_code`, the shells' convention for a death by signal (128 + the signal's number: 143 for SIGTERM,
    130 for SIGINT)."""

    def __init__(self, signum: int, message: str = "") -> None:
        super().__init__(message or f"interrupted by signal {signum}")
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum
