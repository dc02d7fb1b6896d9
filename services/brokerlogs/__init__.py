"""Kafka's own broker and controller logs (``state-change.log``, ``controller.log``) read as evidence of
controller state, for incidents nobody captured: the lines (``lines``) and what each one says (``evidence``).
The normalizer that turns that evidence into ControllerEvents is ``services.brokerlogs.normalizer``."""
