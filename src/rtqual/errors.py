"""Exit codes (DESIGN.md) and the one error type the CLI turns into a one-line message."""

EXIT_PASS = 0
EXIT_ERROR = 1
EXIT_FAIL = 2
EXIT_SKIP = 3
EXIT_INCONCLUSIVE = 4
# the exit code of each verdict: rtqual.answers.verdict.EXIT_CODES


class RtqError(Exception):
    """A user-facing error: printed as one line by the CLI, never as a traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR):
        # one line whatever the user typed: a value quoted into the message keeps its line breaks escaped
        super().__init__(str(message).replace("\r", "\\r").replace("\n", "\\n"))
        self.exit_code = exit_code
