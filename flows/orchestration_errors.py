"""When Prefect itself fails a run: its API unreachable, its server answering 500 (a full
disk under its database), a crashed run. Said as one typed error the CLI prints in a line
(``error: ...``, exit 1, ``{"error": ...}`` with --json), instead of a 70-line traceback."""

from __future__ import annotations

from cortexgraph.storage.errors import CortexGraphError


class OrchestrationError(CortexGraphError, RuntimeError):
    """Prefect could not run the flow; nothing of ours raised."""


def prefect_failed(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is Prefect's or its HTTP client's, not ours: our
    typed errors stay what they are, and anything else is a bug that keeps its traceback."""
    import httpx
    from prefect.exceptions import PrefectException

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CortexGraphError):
            return False
        if isinstance(seen, PrefectException | httpx.HTTPError):
            return True
        seen = seen.__cause__
    return False


def orchestration_message(exc: BaseException, local_api: str | None) -> str:
    """What failed, where, and where to look: the configured API, or cortexgraph's own local
    server (its database is in PREFECT_HOME)."""
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME

    said = _first_line(exc)
    cause = exc.__cause__
    if cause is not None and _first_line(cause) not in said:
        said += f" ({type(cause).__name__}: {_first_line(cause)})"
    if local_api is not None:
        where = (
            f"the local server cortexgraph started ({local_api}), with its database in "
            f"{PREFECT_HOME.value()} (a full disk there fails every run)"
        )
    elif PREFECT_API_URL.value():
        where = (
            f"PREFECT_API_URL ({PREFECT_API_URL.value()}): is its server running? Unset "
            "PREFECT_API_URL to use a local server of cortexgraph's own"
        )
    else:
        where = "its temporary server"
    return f"Prefect could not run the consolidation flow: {said}. Prefect's API here is {where}."


def _first_line(exc: BaseException) -> str:
    # httpx's status errors end in a link to MDN's page on the status code: not news here
    text = str(exc).split(" - For more information check:")[0]
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["OrchestrationError", "orchestration_message", "prefect_failed"]
