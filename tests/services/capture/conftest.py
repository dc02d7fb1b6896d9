"""Helpers: a real metadata log built from KRaft batches (services.kraft.build_batch) for offline tests."""
