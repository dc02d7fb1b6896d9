"""Questions about the past: the DuckDB store and its queries (the state model they answer with is
schemas.state).

- `replay.store`   `Store(path).load(paths)`, `Store.point(seq=|offset=|time=|event_id=)`
- `replay.queries` state_as_of, diff, under_replicated, under_min_isr, offline, image_at
- `replay.changes` timeline, explain
- `replay.gaps`    the stretches nobody read, and the answers that fall in or depend on one
- `replay.formats` describe (kafka-topics --describe), to_json, rich tables, text renderers
"""
from replay.errors import LayoutVersionError, StoreError
from schemas.state.errors import ReplayError

__all__ = ["LayoutVersionError", "ReplayError", "StoreError"]
