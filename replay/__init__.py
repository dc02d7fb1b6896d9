"""The replay engine: immutable image + pure apply, the DuckDB store, and the queries over it.

- `replay.image`   ClusterImage and its parts (frozen, persistent maps), `EMPTY`
- `replay.apply`   pure `apply(image, event, on_error)` and the fold `replay(events)`
- `replay.delta`   `ImageBuilder` / `fold`: the fast mutable delta, equal to the fold of apply
- `replay.store`   `Store(path).load(paths)`, `Store.point(seq=|offset=|time=|event_id=)`
- `replay.queries` state_as_of, diff, under_replicated, under_min_isr, offline, image_at
- `replay.changes` timeline, explain
- `replay.formats` describe (kafka-topics --describe), to_json, rich tables, text renderers
"""
from replay.apply import apply, replay
from replay.delta import ImageBuilder, fold
from replay.errors import LayoutVersionError, ReplayError, StoreError
from replay.image import EMPTY, ClusterImage, Provenance

__all__ = [
    "EMPTY", "ClusterImage", "ImageBuilder", "LayoutVersionError", "Provenance", "ReplayError", "StoreError",
    "apply", "fold", "replay",
]
