"""Wakes the poller early when a watched directory changes (watchdog, non-recursive).

Polling stays the truth: network filesystems (NFS, GPFS, Lustre) never send events, and a
failed watch (inotify limits) only means the poller waits its full interval.
"""

from __future__ import annotations

import threading
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

#: events that mean "something was written"; opens and read-only closes (ours) are not
_WRITE_EVENTS = frozenset({"modified", "created", "moved", "deleted", "closed"})


class DirectoryWaker(FileSystemEventHandler):
    """Sets `wake` whenever something is written in one of the watched directories (it is
    the handler of its observer's events)."""

    def __init__(self, wake: threading.Event) -> None:
        self._wake = wake
        self._observer: BaseObserver | None = None
        self._watches: dict[Path, ObservedWatch] = {}
        # watch() runs on the poller thread, stop() on the app thread
        self._lock = threading.Lock()
        self._stopped = False
        #: why watching is off (None while it works); the poller carries on either way
        self.failure: str | None = None

    def watch(self, directories: list[Path]) -> None:
        """Watch exactly these directories (cheap when nothing changed)."""
        wanted = set(directories)
        with self._lock:
            if wanted == set(self._watches) or self.failure is not None or self._stopped:
                return
            self._rewatch(wanted)

    def _rewatch(self, wanted: set[Path]) -> None:
        try:
            if self._observer is None:
                self._observer = Observer()
                self._observer.daemon = True
                self._observer.start()
            for gone in set(self._watches) - wanted:
                self._observer.unschedule(self._watches.pop(gone))
            for new in wanted - set(self._watches):
                self._watches[new] = self._observer.schedule(self, str(new), recursive=False)
        except OSError as error:
            # e.g. inotify watch limit reached: fall back to plain polling
            self.failure = f"file events unavailable ({error}); polling every second"
            self._drop_observer()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _WRITE_EVENTS:
            self._wake.set()

    def stop(self) -> None:
        """Stop watching for good."""
        with self._lock:
            self._stopped = True
            self._drop_observer()

    def _drop_observer(self) -> None:
        observer, self._observer = self._observer, None
        self._watches.clear()
        if observer is not None:
            # not joined: its thread is a daemon, and a watch on a hung network mount must
            # not hold the exit (the observer stops by itself once it wakes)
            observer.stop()
