"""Errors a user can cause: each becomes one clear line on stderr and an exit code."""

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_UNDIAGNOSABLE = 3


class RldoctorError(Exception):
    """An error with a one-line message meant for the person at the terminal."""

    exit_code = EXIT_UNDIAGNOSABLE


class UsageError(RldoctorError):
    exit_code = EXIT_USAGE


class Undiagnosable(RldoctorError):
    """Nothing could be diagnosed: cluster unreachable, input unreadable."""

    exit_code = EXIT_UNDIAGNOSABLE


class Interrupted(RldoctorError):
    """Ctrl-C: the probes were cleaned up on the way out."""

    exit_code = 130


# -- one line of an exception, for a snapshot field, a progress line or a report ------------------
# The one place that turns an exception into a line; collectors, smoke-train and the target
# loader all use these two (rldoctor.cluster.session.error_line is `first_line`).
def _message_lines(exc: BaseException) -> list[str]:
    return [line.strip() for line in str(exc).strip().splitlines() if line.strip()]


def first_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`: a local error, whose first line says what went wrong."""
    lines = _message_lines(exc)
    return f"{type(exc).__name__}: {lines[0][:limit]}" if lines else type(exc).__name__


def last_line(exc: BaseException, limit: int = 500) -> str:
    """`Type: last line of the message`: a remote error (RayTaskError, a traceback in its
    message), whose last line is the exception that was raised over there."""
    lines = _message_lines(exc)
    name = type(exc).__name__
    if not lines:
        return name
    line = lines[-1]
    return (line if line.startswith(name) else f"{name}: {line}")[:limit]
