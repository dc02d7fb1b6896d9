"""Follow a live KRaft metadata log directory: records (LogTailer) or ControllerEvents (EventTailer)."""
from services.tail.events import EventTailer
from services.tail.tailer import Batch, Gap, LogTailer, Snapshot, TailError, TailPosition

__all__ = ["Batch", "EventTailer", "Gap", "LogTailer", "Snapshot", "TailError", "TailPosition"]
