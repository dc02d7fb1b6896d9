"""Dev tooling, not product: local Kafka/ZooKeeper clusters from the official jars, MiniDFS, the demos and
what the tests and benchmarks drive them with. The product packages (schemas, services, replay, checks,
ctrlaudit) never import it (tests/test_layers.py holds them to that), and the wheel does not ship it."""
