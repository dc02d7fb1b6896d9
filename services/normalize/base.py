"""What every normalizer keeps besides its source's own: the image, the controllers by epoch, the event envelope.

Each normalizer (KRaft, ZooKeeper, broker logs) turns its source into ControllerEvents. They share:
- **the image** (`schemas.state.delta.ImageBuilder`): every event made is applied to it at once, so each "before"
  is read from the fold of the events before; what a topic's id is, is read from it too (a topic is known by
  its TopicChange, whatever the source calls it);
- **the controllers by epoch**: the controller each epoch seen elected, which every event names for its epoch;
- **the envelope**: an event's id from the cluster and its source position, the capture time from the clock, the
  controller of its epoch; and a gap, a stretch that was not read, as a CaptureGap event (recorded, never hidden).

Events come out unchained (seq 0, no hashes): the archive writer or the normalize agent chains them.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import PurePath

from schemas.event_ids import event_id
from schemas.events import CaptureGap, ControllerEvent, Payload, SourcePosition
from schemas.fastbuild import fast_constructor
from schemas.state.delta import ImageBuilder
from schemas.state.image import ClusterImage
from services.normalize.redaction import SecretDigests

_new_event = fast_constructor(ControllerEvent)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class Normalizer:
    """The bookkeeping the three normalizers share (see the module's docstring)."""

    def __init__(self, cluster_id: str, clock: Callable[[], int] | None = None) -> None:
        self.cluster_id = cluster_id
        self.delta = ImageBuilder()  # the image, applied event by event
        self.leaders_by_epoch: dict[int, int] = {}  # the controller each epoch seen elected
        self.secrets = SecretDigests()  # whether a redacted config value changed
        self.clock = clock or wall_clock_ms
        self._file_names: dict[str, str] = {}

    @property
    def image(self) -> ClusterImage:
        """The controller's image after everything fed so far (immutable)."""
        return self.delta.apply()

    def elected(self, epoch: int, controller: int) -> None:
        self.leaders_by_epoch[epoch] = controller

    def topic_id(self, name: str) -> str | None:
        """The id of the live topic `name` (None: the image holds no topic of that name)."""
        return self.delta.topic_id(name)

    def file_name(self, path: str | None) -> str | None:
        """A file's name without the capture host's path (noise in the event)."""
        if not path:
            return None
        name = self._file_names.get(path)
        if name is None:
            name = self._file_names[path] = PurePath(path).name  # a PurePath per event costs ~10 us
        return name

    def envelope(self, source: SourcePosition, event_time_ms: int, epoch: int, payload: Payload,
                 metadata_version: int | None = None, bootstrap: bool = False,
                 eid: str | None = None) -> ControllerEvent:
        """The event of `payload` at `source`, applied to the image. `eid`: its id when the caller has it
        already (the same as event_id(cluster, source), computed without reading the position)."""
        cluster_id = self.cluster_id
        event = _new_event(
            event_id(cluster_id, source) if eid is None else eid, cluster_id, 0, source, event_time_ms,
            self.clock(), self.leaders_by_epoch.get(epoch, -1), epoch, payload, metadata_version, bootstrap, "", "")
        self.delta.put(event)  # the image follows every event made, in the order made
        return event

    def gap_event(self, source: SourcePosition, from_position: int, to_position: int, reason: str,
                  event_time_ms: int, epoch: int, metadata_version: int | None = None,
                  eid: str | None = None) -> ControllerEvent:
        """A stretch from `from_position` to `to_position` of the source that was not read, said at `source`;
        timed `event_time_ms`, or now when the source gives no time (< 0)."""
        time_ms = event_time_ms if event_time_ms >= 0 else self.clock()
        return self.envelope(source, time_ms, epoch, CaptureGap(from_position, to_position, reason),
                             metadata_version, eid=eid)
