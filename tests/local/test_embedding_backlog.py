"""When make dev's embedding worker says it is behind a burst of writes, and caught up
(memory_local.embedding_worker.Backlog, fed batch sizes and times as the worker does)."""

from __future__ import annotations

from memory_local.embedding_worker import Backlog


def feed(backlog: Backlog, batches: list[tuple[float, int]]) -> list[tuple[float, str]]:
    said = []
    for now, claimed in batches:
        due = backlog.after_batch(claimed, now)
        if due:
            said.append((now, due))
    return said


def test_a_long_burst_is_reported_every_interval_then_caught_up_once() -> None:
    backlog = Backlog(every_s=5.0, batch=32)
    full = [(t * 0.25, 32) for t in range(0, 49)]  # 12 s of full batches
    said = feed(backlog, [*full, (12.3, 7), (12.4, 0), (12.5, 0)])
    assert said == [(5.0, "behind"), (10.0, "behind"), (12.3, "caught up")]


def test_a_burst_shorter_than_the_interval_says_nothing() -> None:
    backlog = Backlog(every_s=5.0, batch=32)
    short = [(t * 0.25, 32) for t in range(0, 19)]  # 4.5 s of full batches
    assert feed(backlog, [*short, (4.6, 3), (4.7, 0)]) == []


def test_idle_polls_and_small_batches_never_say_anything() -> None:
    backlog = Backlog(every_s=5.0, batch=32)
    assert feed(backlog, [(t * 0.1, t % 3) for t in range(0, 500)]) == []


def test_each_burst_starts_its_own_interval() -> None:
    backlog = Backlog(every_s=5.0, batch=32)
    first = [(t * 1.0, 32) for t in range(0, 7)]  # behind at 5 s
    second = [(20.0 + t * 1.0, 32) for t in range(0, 7)]  # behind at 25 s, not at 20
    said = feed(backlog, [*first, (7.0, 0), *second, (27.0, 1)])
    assert said == [(5.0, "behind"), (7.0, "caught up"), (25.0, "behind"), (27.0, "caught up")]
