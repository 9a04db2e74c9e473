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
