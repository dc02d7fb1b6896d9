"""Raw source records -> ControllerEvents with state before and after (the logic of the
`normalize` agent, as plain functions and classes usable offline)."""
from services.normalize.kraft_normalizer import KRaftNormalizer, merge

__all__ = ["KRaftNormalizer", "merge"]
