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
