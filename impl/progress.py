"""The progress display a long benchmark reports to: rich.progress.Progress's protocol (a context
manager with add_task / update / advance). impl/ prints nothing itself: `kafkaref bench` hands
in a progress bar, anything else gets SilentProgress.
"""


class SilentProgress:
    """A progress display that shows nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, description: str, total: float | None = None, **fields) -> int:
        return 0

    def update(self, task: int, **fields) -> None:
        return None

    def advance(self, task: int, advance: float = 1) -> None:
        return None
