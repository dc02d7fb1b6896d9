"""What the sources' normalizers share: the change classifier (classify), redaction of secrets (redaction,
password_configs), the offline imports' error and report (imports), and the import of a ZooKeeper-to-KRaft
migration, which spans two sources (migration_offline). Each source's own normalizer and offline import live
with its decoder: services.kraft, services.zookeeper, services.brokerlogs."""
