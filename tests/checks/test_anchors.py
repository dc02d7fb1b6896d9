"""The anchors table: every invariant says where each of its rules comes from, every name it cites is one the
cited file defines (checks/spec_names.json, read from the repositories at pinned commits by
devtools/spec_names.py), the rules it names are the invariant's own, and the README's copy is the catalog's."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from checks import anchor_table
from checks.catalog import BY_NAME, CATALOG, KAFKA, Anchor

ROOT = Path(__file__).resolve().parents[2]
SPEC_NAMES = json.loads((ROOT / "checks" / "spec_names.json").read_text())["sources"]
ANCHORS = [(inv.name, a) for inv in CATALOG for a in inv.anchors]


def defined(a: Anchor) -> bool:
    """Whether the cited file, at the pinned commit, defines the cited name (Kafka: `Class.method`, the class
    being the file's)."""
    names = SPEC_NAMES.get(a.repo, {}).get("files", {}).get(a.path)
    if names is None:
        return False
    if a.repo != KAFKA:
        return a.name in names
    cls, _, method = a.name.partition(".")
    return cls == Path(a.path).stem and method in names


def test_every_invariant_has_an_anchor_and_every_anchor_a_source_or_a_reason():
    for inv in CATALOG:
        assert inv.anchors, inv.name
        for a in inv.anchors:
            if a.repo:
                assert a.path and a.name, (inv.name, a)
            else:  # "no spec states it": then why it holds
                assert not a.path and not a.name and len(a.note) > 40, (inv.name, a)


@pytest.mark.parametrize("name,anchor", [(n, a) for n, a in ANCHORS if a.repo], ids=lambda x: getattr(x, "name", x))
def test_a_cited_name_is_defined_by_the_cited_file(name, anchor):
    assert defined(anchor), (name, anchor.cite())


def test_the_name_list_says_where_it_came_from():
    for repo, source in SPEC_NAMES.items():
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), repo
        assert all(source["files"].values()), repo
    assert json.loads((ROOT / "checks" / "spec_names.json").read_text())["generated_by"] == "devtools/spec_names.py"


def test_the_check_would_catch_a_name_no_spec_defines():
    """The names the catalog once cited wrongly are not defined where they would be cited."""
    r966 = "kafka_data_replication/kraft/kip-966/kip_966_properties.tla"
    assert not defined(Anchor("", "Vanlightly/kafka-tlaplus", r966, "Applied HWM monotonicity"))
    assert not defined(Anchor("", "Vanlightly/kafka-tlaplus", r966, "HighWatermarkIsMonotonic"))
    assert not defined(Anchor("", KAFKA, "metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java",
                              "ReplicationControlManager.electAnyLeader"))
    assert defined(Anchor("", "Vanlightly/kafka-tlaplus", r966, "MinIsrRecoveryQuorum"))  # defined, but not checked


def test_no_citation_of_what_is_not_checked():
    cited = {a.name for _, a in ANCHORS}
    assert "MinIsrRecoveryQuorum" not in cited  # would flag Kafka 4.x's last known leader: not checked
    safety = {a.name for n, a in ANCHORS if BY_NAME[n].deadline is None}
    assert not any(n.startswith("Eventually") for n in safety)  # liveness anchors no safety check
    # and the bounded-liveness checks name the liveness properties they bound
    assert {"EventuallyReassignmentCompletes", "EventuallyUnfenced", "EventuallyAcknowledgedValueFullyReplicated",
            "EventuallyLeaderElected"} <= cited
    reassignment = {a.name for n, a in ANCHORS if n == "reassignment_legal"}
    assert {"PerformPartitionReassignment", "ReceiveAlterPartitionRequest"} <= reassignment


def test_the_rules_an_anchor_names_are_the_invariants_own():
    for inv in CATALOG:
        sql = inv.sql_path.read_text()
        for a in inv.anchors:
            for rule in re.findall(r"\b[a-z]+(?:_[a-z0-9]+)+\b", a.covers):
                assert f"'{rule}'" in sql, (inv.name, rule)


def test_the_readme_holds_the_catalogs_table():
    readme = (ROOT / "checks" / "README.md").read_text()
    assert anchor_table.markdown() in readme, "run: python -m checks.anchor_table --write"
    for inv in CATALOG:
        assert f"| `{inv.name}` |" in anchor_table.markdown()


def test_the_html_cell_is_the_catalogs_and_escaped():
    cell = anchor_table.html_cell("isr_elr_sanity")
    assert '<span class="anchor-name">ValidControllerIsrAndElr</span>' in cell
    assert '<span class="anchor-name">ValidControllerState</span>' in cell
    assert "&lt; min ISR" in anchor_table.html_cell("valid_high_watermark")  # the note's "<", escaped
    assert anchor_table.html_cell("<script>") == ""
