"""A job's messages, sent one at a time (``Result.message``), as the master uses them: ids, and whole jobs."""

from __future__ import annotations

from dataclasses import replace

from gcbench.cluster import Result


def message_ids(scheme, result: Result) -> tuple[int, ...]:
    """The global ids of the messages a result carries: all its worker's, or the one it names."""
    own = scheme.messages(result.job.worker)
    return own if result.message is None else (own[result.message],)


def whole_jobs(results: list[Result]) -> list[Result]:
    """The results with each job's messages gathered into one result, in the order of their jobs' first
    message: ``messages`` indexed as the worker's messages (None for one not received), the losses merged.
    A result carrying its whole job stays as it is."""
    parts: dict[int, list[Result]] = {}
    out: list[Result | int] = []
    for result in results:
        if result.message is None:
            out.append(result)
            continue
        key = id(result.job)
        if key not in parts:
            parts[key] = []
            out.append(key)
        parts[key].append(result)
    return [item if type(item) is Result else gather(parts[item]) for item in out]


def gather(parts: list[Result]) -> Result:
    """One job's per-message results as one result: the last one's times, every message in its place."""
    last = max(parts, key=lambda part: part.at)
    losses = {j: value for part in parts if part.losses for j, value in part.losses.items()}
    final = any(part.final for part in parts)
    messages, exact = _in_place(parts, "messages"), _in_place(parts, "exact")
    return replace(last, messages=messages, exact=exact, losses=losses or None, message=None, final=final)


def _in_place(parts: list[Result], field: str) -> list | None:
    """The parts' one vector each of ``field`` (messages, or their uncompressed copies), each at its message's
    index among the worker's; None where no part has any."""
    if all(getattr(part, field) is None for part in parts):
        return None
    vectors = [None] * (max(part.message for part in parts) + 1)
    for part in parts:
        value = getattr(part, field)
        vectors[part.message] = None if value is None else value[0]
    return vectors
