"""`Beside`: one job on a second thread next to the caller's own work (the model build's arg
scatters next to its sort and depth), or run in place when asked for its result."""
from __future__ import annotations

import threading


class Beside:
    """`run(fn, *args)` starts fn on a second thread when `threaded`, else runs it when its result is
    asked for; leaving the block waits for the thread (also when the block raised). numpy releases
    the GIL in the scatters, so the two threads share no Python state but the popped dict."""

    def __init__(self, threaded: bool):
        self.threaded = threaded
        self.thread: threading.Thread | None = None

    def __enter__(self) -> Beside:
        return self

    def run(self, fn, *args) -> Beside:
        self.fn, self.args, self.value, self.error = fn, args, None, None
        if self.threaded:
            self.thread = threading.Thread(target=self._call, name="ptprof-build", daemon=True)
            self.thread.start()
        return self

    def _call(self) -> None:
        try:
            self.value = self.fn(*self.args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread by result()
            self.error = exc
        finally:
            self.fn = self.args = None

    def result(self):
        if self.thread is None:
            self._call()
        else:
            self.thread.join()
        if self.error is not None:
            raise self.error
        value, self.value = self.value, None
        return value

    def __exit__(self, *exc) -> None:
        if self.thread is not None:
            self.thread.join()
