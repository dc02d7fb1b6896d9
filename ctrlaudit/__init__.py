"""ctrlaudit: the CLI and settings that tie capture, replay and checks together."""
__version__ = "0.1.0"
