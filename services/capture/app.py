"""The capture worker: one faust.App, its topics and tables, declared once.

Quick start (a local dev cluster, see docs/how-to/live-capture.md):

    CTRLAUDIT_BOOTSTRAP_SERVERS=127.0.0.1:9092 \\
    CTRLAUDIT_METADATA_DIR=/var/lib/kafka/__cluster_metadata-0 CTRLAUDIT_CLUSTER_ID=... \\
    python -m services.capture worker -l info

or ``ctrlaudit capture --metadata-dir ... --bootstrap-server ...``. Settings come from CTRLAUDIT_* env
vars (services/capture/settings.py).
"""
from __future__ import annotations

import gc

import faust

from services.capture import serializers as _codecs  # noqa: F401  (registers the Avro codecs)
from services.capture.settings import (
    CHECKPOINTS_TOPIC_CONFIG, EVENTS_BATCH_BYTES, EVENTS_TOPIC_CONFIG, GC_THRESHOLDS, IMAGE_TABLE_CONFIG, MAX_MESSAGE_BYTES,
    RAW_TOPIC_CONFIG, Settings,
)
from services.capture.security import faust_credentials

settings = Settings()
# the --command-config file, read once (services/capture/security.py); the worker's own consumers
# (agents.py) and the quorum gate (sources.py) take it from here too
security = settings.security

app = faust.App(
    settings.worker_app_id,
    # the agents, tasks and sources (agents.py) import this module for the app and its topics; Faust imports
    # them when the worker starts (app.discover), so the two modules import each other in one direction only
    autodiscover=["services.capture.agents"],
    broker=[f"kafka://{hp}" for hp in settings.bootstrap_servers.split(",")],
    store="memory://",  # tables recover from their changelog topics on start
    datadir=settings.data_dir,
    broker_credentials=faust_credentials(security),
    web_enabled=False,
    web_port=settings.web_port,  # the `worker` command starts the web server anyway (unless --without-web)
    topic_replication_factor=settings.replication_factor,
    topic_partitions=1,
    producer_acks=-1,
    producer_max_request_size=MAX_MESSAGE_BYTES,
    # aiokafka builds one batch per partition while the previous one is in flight and waits when it is
    # full, so a partition's throughput is one batch per acks=all round trip: 16 KiB (the default) held
    # ~15 events, which capped a burst at ~120 events/s. Keep batches under the brokers' default
    # message.max.bytes (1 MiB), which bounds a record batch on the events topic.
    producer_max_batch_size=EVENTS_BATCH_BYTES,
    producer_linger=0.005,
    consumer_max_fetch_size=MAX_MESSAGE_BYTES,
    stream_wait_empty=False,
    # a kill -9'd worker's group membership must expire quickly, or its successor waits for it
    broker_session_timeout=10.0,
    broker_heartbeat_interval=2.0,
    # aiokafka's consumer, when it looks up a start offset, retries a NotLeaderForPartition answer without
    # refreshing its metadata (robinhood/aiokafka#9): after a broker restart moved a leader, a starting
    # worker asked the old leader 10 times a second until the metadata aged out (5 min by default; seen
    # for 2 min on the 3.9 cluster). Refresh every 10 s instead; a metadata request is cheap.
    consumer_metadata_max_age_ms=10_000,
    producer_metadata_max_age_ms=10_000,
)

# Sources -> normalize: RawRecords (services/capture/serializers.py), decoded by the agent so that a bad
# message can go to the dead-letter topic with its reason instead of being skipped by Faust.
raw_topic = app.topic(settings.raw_topic, key_type=bytes, value_type=bytes, value_serializer="raw",
                      partitions=1, config=RAW_TOPIC_CONFIG)
# normalize -> archiver, watch, ctrlaudit load: ControllerEvents, key = cluster id, chained in order.
events_topic = app.topic(settings.events_topic, key_type=bytes, value_serializer="ctrlaudit-event",
                         partitions=1, config=EVENTS_TOPIC_CONFIG)
# watch reads the same topic as Avro records (what LiveChecker observes; no ControllerEvent objects).
watch_topic = events_topic.derive(value_serializer="ctrlaudit-event-record")
alerts_topic = app.topic(settings.alerts_topic, key_type=bytes, value_serializer="json", partitions=1)
dead_letter_topic = app.topic(settings.dead_letter_topic, key_type=bytes, value_type=bytes,
                              value_serializer="raw", partitions=1, config=EVENTS_TOPIC_CONFIG)
# normalize -> archiver: signed checkpoints of the events' Merkle tree (services/capture/signing.py), key = cluster
# id, value = the signed note, its tree's right edge in a header. Its own topic, so that its ACLs can differ: only
# the capture worker writes it.
checkpoints_topic = app.topic(settings.checkpoints_topic, key_type=bytes, value_type=bytes, value_serializer="raw",
                              partitions=1, config=CHECKPOINTS_TOPIC_CONFIG)

# The normalizer's image checkpoints (services/capture/image_store.py): a changelog-backed table, so a
# restarted worker replays the raw topic from its last checkpoint, not from offset 0. Compacted changelog
# with small segments, so that recovery reads about one checkpoint, not every one ever written.
image_table = app.Table("normalizer-images", key_type=str, value_type=bytes, partitions=1,
                        extra_topic_configs=IMAGE_TABLE_CONFIG)

def main() -> None:
    gc.set_threshold(*GC_THRESHOLDS)  # see settings.GC_THRESHOLDS
    app.main()
