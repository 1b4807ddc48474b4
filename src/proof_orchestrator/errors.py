"""The one exception tree of the orchestrator.

A failed proof attempt is a *result* (:class:`~proof_orchestrator.goals.Outcome`),
never an exception. Exceptions mean that something is broken: a prover that
cannot start or stopped answering, a file that cannot be read, a ledger that
cannot be opened.

::

    OrchError
    ├── ProverError                 a prover process misbehaved
    │   ├── ProverNotFound          the executable is not installed
    │   ├── ProverStartError        it started but never reached its first prompt
    │   ├── ProverCrashed           it exited (EOF on its output)
    │   ├── ProverHung              no answer within timeout + grace; it was killed
    │   ├── ProverDesync            replies no longer match requests; it was killed
    │   ├── ProverReplyTooLarge     a reply exceeded the byte cap
    │   ├── ProverProtocolError     a reply is not what the protocol allows (bad JSON)
    │   ├── ProverRequestError      the prover refused a request as malformed (Lean REPL)
    │   └── SessionClosed           the session was used after aclose()
    ├── ProjectError                user files
    │   ├── PrefixError             the text before a hole does not load in the prover
    │   ├── PathNotFound            a path given by the user does not exist
    │   ├── SourceSyntaxError       a file cannot be split into sentences
    │   ├── UnreadableSource        a file is binary, not UTF-8 or cannot be scanned
    │   ├── FileChangedError        a file changed on disk while we worked on it
    │   └── FileWriteError          writing a file failed (disk full, I/O error); it is unchanged
    ├── ScriptRejected              a candidate proof script is not allowed
    ├── LedgerError                 the ledger cannot be opened or written
    │   └── LedgerUnavailable       the database stayed unreachable past the retry limit
    ├── ModelError                  a model call (the llm strategy) did not give usable text
    │   ├── ModelUnavailable        no key, no SDK or no network: the strategy is off
    │   └── ModelBudgetExhausted    the run's --llm-budget-usd is spent
    └── AgentError                  an MCP tool call that cannot be served (unknown hole...)
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "FileChangedError",
    "FileWriteError",
    "LedgerError",
    "LedgerUnavailable",
    "ModelBudgetExhausted",
    "ModelError",
    "ModelUnavailable",
    "OrchError",
    "PathNotFound",
    "PrefixError",
    "ProjectError",
    "ProverCrashed",
    "ProverDesync",
    "ProverError",
    "ProverHung",
    "ProverNotFound",
    "ProverProtocolError",
    "ProverReplyTooLarge",
    "ProverRequestError",
    "ProverStartError",
    "ScriptRejected",
    "SessionClosed",
    "SourceSyntaxError",
    "UnreadableSource",
]


class OrchError(Exception):
    """Base class of every error the orchestrator raises on purpose."""


class ProverError(OrchError):
    """A prover process misbehaved; the session that owned it is unusable."""


class ProverNotFound(ProverError):
    """The prover executable is not installed or not on ``PATH``."""


class ProverStartError(ProverError):
    """The prover started but did not reach its first prompt."""


class ProverCrashed(ProverError):
    """The prover exited while a reply was expected."""


class ProverHung(ProverError):
    """The prover did not answer within its timeout plus grace and was killed."""


class ProverDesync(ProverError):
    """The reply stream no longer matches the requests; the prover was killed."""


class ProverReplyTooLarge(ProverError):
    """A single reply exceeded the configured byte cap; the prover was killed."""


class ProverProtocolError(ProverError):
    """A reply broke the protocol (for example, it is not valid JSON); the prover was killed."""


class ProverRequestError(ProverError):
    """The prover answered that a request was malformed or referred to something unknown.

    The Lean REPL does this with ``{"message": ...}`` (``Unknown environment.``,
    ``Unknown proof state.``, JSON it could not parse). It points at a bug on our
    side, so it is an error rather than a failed tactic; the process stays usable.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SessionClosed(ProverError):
    """A session was used after it was closed."""


class ProjectError(OrchError):
    """A problem with the user's files."""


class PrefixError(ProjectError):
    """The file's text before a hole does not load in the prover."""


class PathNotFound(ProjectError):
    """A path given on the command line does not exist."""


class SourceSyntaxError(ProjectError):
    """A source file cannot be split into sentences (e.g. an unclosed comment).

    ``offset`` is where the offending construct starts in the text, when known.
    """

    def __init__(self, reason: str, *, offset: int | None = None) -> None:
        where = f" starting at offset {offset}" if offset is not None else ""
        super().__init__(reason + where)
        self.reason = reason
        self.offset = offset


class UnreadableSource(ProjectError):
    """A source file is binary, not UTF-8, or cannot be scanned; the message names it."""


class FileChangedError(ProjectError):
    """A file changed on disk between reading it and writing a proof into it."""


class FileWriteError(ProjectError):
    """Writing a file failed (``ENOSPC``, ``EIO``, ...); the file holds its old bytes.

    ``errno`` is the operating system's error number.
    """

    def __init__(self, message: str, errno: int | None) -> None:
        super().__init__(message)
        self.errno = errno


class ScriptRejected(OrchError):
    """A candidate proof script contains something that is never allowed.

    ``kind`` is the gate's closed word for the rule it broke (Coq's are
    ``coq.script.GateRefusal``: ``empty``, ``comment``, ``syntax``,
    ``forbidden``, ``vernacular``); ``other`` where a gate names none.
    """

    def __init__(self, message: str, kind: str = "other") -> None:
        super().__init__(message)
        self.kind = kind


class LedgerError(OrchError):
    """The ledger database cannot be opened, migrated or written."""


class ModelError(OrchError):
    """A model call failed after its bounded retries (timeout, 429, 5xx, malformed reply).

    ``reason`` is a short closed word (``timeout``, ``rate_limited``, ``server_error``,
    ``malformed``, ``connection``, ``budget``, ``unavailable``) recorded on the attempt.
    """

    def __init__(self, message: str, reason: str = "error", requests: int = 0) -> None:
        super().__init__(message)
        self.reason = reason
        #: HTTP requests made before giving up
        self.requests = requests


class ModelUnavailable(ModelError):
    """The llm strategy cannot run here: no key, no SDK, or the provider is unreachable."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "unavailable")


class ModelBudgetExhausted(ModelError):
    """The USD budget of the run is spent: no further model request is made."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "budget")


class AgentError(OrchError):
    """An agent's tool call cannot be served (unknown hole, path outside the project...)."""


class LedgerUnavailable(LedgerError):
    """The ledger's database could not be reached for longer than the retry policy allows."""
