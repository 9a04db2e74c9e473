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
# Written once in rldoctor.words (standard library only, so node-side code has them too);
# re-exported here for the callers that import them with the exit codes.
from rldoctor.words import first_line, last_line  # noqa: E402,F401
