# The two things a newcomer does: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo demo-zk demo-sim bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

# Every test (pytest-xdist: one worker a core; the real clusters' tests in order on one of them, tests/conftest.py)
test: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadgroup

# A real 3-node Kafka cluster when Java and Maven are there; the simulator otherwise.
demo: $(STAMP)
	@if command -v java >/dev/null && command -v mvn >/dev/null; then \
		$(BIN)/python -m devtools.demo_kafka; \
	else \
		echo "no java/mvn: running the simulated demo (make demo-sim)"; $(BIN)/python -m devtools.demo; \
	fi

# The same incident and forensics on ZooKeeper and 3 ZooKeeper-mode Kafka 3.9 brokers (needs java and mvn).
demo-zk: $(STAMP)
	$(BIN)/python -m devtools.demo_kafka --zookeeper

demo-sim: $(STAMP)
	$(BIN)/python -m devtools.demo

bench: $(STAMP)
	$(BIN)/python bench/replay.py

clean:
	rm -rf $(VENV) .pytest_cache demo-out
