"""Who asked, as the store keeps it (replay/who_asked.py): the attributions a load makes from the kept requests
are the ones `attribute` makes from the archive's events, and explain, timeline and the auditors' table say them."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from replay import changes, who_asked
from replay.attribution import AMBIGUOUS, CONTROLLER, REQUEST, UNATTRIBUTED, attribute
from replay.store import Store
from schemas.archive.listing import iter_events
from schemas.events import (
    ClientRequest, ControllerEvent, PartitionChange, PartitionChangeKind as K, PartitionState, SourceKind,
    SourcePosition, TopicChange, TopicChangeKind,
)
from schemas.requests.kept import line_of
from schemas.requests.record import Body, Resource, Target
from services.requests.event import to_event
from tests.archive_files import write_archive_file
from tests.replay.test_attribution import T0, allowed, req

CLUSTER = "c"
A = PartitionState((1, 2, 3), (1, 2, 3), 1, 1, 1)
B = PartitionState((1, 2, 3, 4), (1, 2, 3), 1, 1, 2, adding_replicas=(4,), removing_replicas=(1,))


def change(seq: int, payload, at: int) -> ControllerEvent:
    return ControllerEvent(f"e{seq}", CLUSTER, seq, SourcePosition(SourceKind.KRAFT_LOG, seq), at, at, 1, 1, payload)


def history() -> list[ControllerEvent]:
    return [change(0, TopicChange(TopicChangeKind.CREATED, "orders", "tid"), T0),
            change(1, PartitionChange("orders", "tid", 0, None, A, (K.CREATE,)), T0),
            change(2, PartitionChange("orders", "tid", 0, A, replace(A, isr=(1, 2), partition_epoch=2), (K.ISR,)),
                   T0 + 1_000),
            change(3, PartitionChange("orders", "tid", 0, A, B, (K.REPLICAS, K.REASSIGNMENT_START)), T0 + 2_000),
            change(4, TopicChange(TopicChangeKind.CREATED, "payments", "tid2"), T0 + 3_000)]


def requests(first_seq: int) -> list[ControllerEvent]:
    """The nodes' lines, appended after the history as an import does: alice's CreateTopics on broker 1, forwarded to
    controller 3, with the authorizer's decision; bob's reassignment; mallory's denied delete."""
    lines = [(1, replace(req("CreateTopics", T0 - 40, body=Body(topics=("orders",))), software_name="apache-kafka-java",
                         software_version="4.3.1")),
             (3, req("CreateTopics", T0 - 20, body=Body(topics=("orders",)), forwarded=True)),
             (3, allowed("CreateTopics", T0 - 21, Resource("Topic", "LITERAL", "orders"))),
             (2, replace(req("AlterPartitionReassignments", T0 + 1_990, "User:bob",  # a client before KIP-511
                             Body(targets=(Target("orders", 0, (2, 3, 4)),)), correlation=11),
                         software_name="unknown", software_version="unknown")),
             (1, allowed("DeleteTopics", T0 + 2_500, Resource("Topic", "LITERAL", "orders"), "User:mallory",
                         outcome="denied"))]
    return [replace(to_event(CLUSTER, node, r, place, T0 + 9_000), seq=first_seq + place)
            for place, (node, r) in enumerate(lines)]


def loaded(tmp_path: Path, *files: list[ControllerEvent]) -> Store:
    (tmp_path / "archive").mkdir()
    s = Store(tmp_path / "s.duckdb")
    for i, events in enumerate(files):  # the archive grows, a load each time: the requests come in a later load
        write_archive_file(tmp_path / "archive" / f"{i:02d}.avro", events)
        s.load([tmp_path / "archive"], workers=1)
    return s


def test_the_store_attributes_as_the_archive_does(tmp_path: Path) -> None:
    h = history()
    with loaded(tmp_path, h, requests(len(h))) as s:
        said = who_asked.asked(s.con, CLUSTER, range(10))
        events = list(iter_events(tmp_path / "archive"))
        lines = [line_of(e) for e in events if isinstance(e.payload, ClientRequest)]
        expected = {a.seq: a for a in attribute(events, lines)}
        assert sorted(said) == sorted(expected) == [0, 1, 2, 3, 4]  # changes only: no answer for a request
        assert {seq: a.cause for seq, a in said.items()} == {seq: a.cause for seq, a in expected.items()} == {
            0: REQUEST, 1: REQUEST, 2: CONTROLLER, 3: REQUEST, 4: UNATTRIBUTED}
        alice = said[1]
        assert (alice.principal, alice.host, alice.client_id, alice.software, alice.received_by) == (
            "User:alice", "10.0.3.7", "alice-tool", "apache-kafka-java 4.3.1", 1)
        assert alice.text.startswith("requested by User:alice from 10.0.3.7 (client id alice-tool, apache-kafka-java "
                                     "4.3.1) at ") and ", received by node 1: CreateTopics" in alice.text
        assert said[3].principal == "User:bob" and said[3].received_by == 2
        assert "reassign" not in said[2].text and "ISR" in said[2].text
        assert "no CreateTopics request naming topic payments" in said[4].text
        assert {seq: a.text.partition(": ")[2] for seq, a in said.items() if a.cause != REQUEST} == {
            seq: a.why for seq, a in expected.items() if a.cause != REQUEST}


def test_explain_and_timeline_say_who_asked(tmp_path: Path) -> None:
    from replay import formats
    h = history()
    with loaded(tmp_path, h, requests(len(h))) as s:
        e = changes.explain(s, seq=3)
        assert "  who asked:         requested by User:bob (client id bob-tool) at " in formats.explain_text(e)
        t = changes.timeline(s, s.point(), "orders", 0)
        text = formats.timeline_text(t)
        assert [c.asked.cause for c in t.changes if c.asked] == [REQUEST, CONTROLLER, REQUEST]
        assert text.count("requested by User:alice") == 1 and text.count("requested by User:bob") == 1
        assert "AlterPartition" not in text.splitlines()[2]  # the controller's ISR change: explain says why
        assert '"principal": "User:bob"' in formats.to_json(t)
        csv_rows = formats.to_csv(t).splitlines()
        assert csv_rows[0].endswith("cause,principal,host,client_id,who_asked") and ",request,User:bob," in csv_rows[3]


def test_the_auditors_table_lists_changes_and_denied_attempts(tmp_path: Path) -> None:
    h = history()
    with loaded(tmp_path, h, requests(len(h))) as s:
        cols, rows = who_asked.table(s.con, CLUSTER)
    got = [dict(zip(cols, r)) for r in rows]
    assert [(r["seq"], r["cause"], r["principal"]) for r in got] == [
        (0, REQUEST, "User:alice"), (1, REQUEST, "User:alice"), (3, REQUEST, "User:bob"),
        (9, "denied", "User:mallory"), (4, UNATTRIBUTED, None)]
    assert got[3]["resource"] == "Topic:LITERAL:orders" and got[3]["received_by"] == 1
    # the software as explain says it: a client that did not name its own has none
    assert [r["software"] for r in got[:3]] == ["apache-kafka-java 4.3.1"] * 2 + [None]


def test_without_kept_requests_nobody_is_named_and_nothing_is_guessed(tmp_path: Path) -> None:
    with loaded(tmp_path, history()) as s:
        said = who_asked.asked(s.con, CLUSTER, range(5))
        assert not s.con.execute("SELECT count(*) FROM attributions").fetchall()[0][0]
    assert {seq: a.cause for seq, a in said.items()} == {0: who_asked.NOT_KEPT, 1: who_asked.NOT_KEPT,
                                                         2: CONTROLLER, 3: who_asked.NOT_KEPT, 4: who_asked.NOT_KEPT}
    assert "the archive keeps no request logs" in said[0].text


def test_a_kept_request_this_build_cannot_read_back_is_named_and_left_out(tmp_path: Path) -> None:
    h = history()
    kept = requests(len(h))
    odd = replace(kept[3], payload=replace(kept[3].payload, body='{"no_such_field": 1}'))
    with loaded(tmp_path, h, [*kept[:3], odd, kept[4]]) as s:
        report_again = s.load([tmp_path / "archive"], workers=1)  # nothing new: the attributions stand as made
        said = who_asked.asked(s.con, CLUSTER, [0, 3])
    assert report_again.events_added == 0
    assert said[0].cause == REQUEST and said[3].cause == UNATTRIBUTED


def test_the_load_command_names_unreadable_requests(tmp_path: Path) -> None:
    from tests.ctrlaudit.conftest import run
    h = history()
    kept = requests(len(h))
    odd = replace(kept[3], payload=replace(kept[3].payload, body='{"no_such_field": 1}'))
    write_archive_file(tmp_path / "a.avro", [*h, *kept[:3], odd, kept[4]])
    done = run("load", str(tmp_path / "a.avro"), "--store", str(tmp_path / "s.duckdb"))
    assert done.exit_code == 0, done.output
    assert "WARNING 1 kept request(s) this build cannot read back (seq 8): left out of who asked" in done.output


def test_an_ambiguous_change_names_every_candidate(tmp_path: Path) -> None:
    h = history()[:2]
    both = [req("CreateTopics", T0 - 9, body=Body(topics=("orders",))),
            req("CreateTopics", T0 - 8, "User:bob", Body(topics=("orders",)), correlation=4)]
    kept = [replace(to_event(CLUSTER, 1, r, i, T0), seq=2 + i) for i, r in enumerate(both)]
    with loaded(tmp_path, [*h, *kept]) as s:
        said = who_asked.asked(s.con, CLUSTER, [0])
        principals = s.con.execute("SELECT principals FROM attributions WHERE seq = 0").fetchall()[0][0]
    assert said[0].cause == AMBIGUOUS and said[0].principal is None and "the logs do not tell which" in said[0].text
    assert principals == ["User:alice", "User:bob"]


def test_a_kept_stretch_of_the_logs_not_read_is_said_beside_each_unattributed_change(tmp_path: Path) -> None:
    from services.requests.event import gap_events
    from services.requests.reader import Gap

    h = history()
    kept = requests(len(h))
    (gap,) = gap_events(CLUSTER, [Gap("/logs/n1/kafka-request.log", "a line cut short", 2, 7, 8, T0 - 5)],
                        {Path("/logs/n1"): 1})
    with loaded(tmp_path, h, [*kept, replace(gap, seq=len(h) + len(kept))]) as s:
        said = who_asked.asked(s.con, CLUSTER, range(5))
        stretches = s.con.execute("SELECT count(*) FROM events WHERE kind = 'CaptureGap'").fetchall()[0][0]
    assert stretches == 1
    assert said[4].cause == UNATTRIBUTED and said[4].text.endswith(
        "; 1 stretch(es) of the logs not read (kafka-request.log: 2 lines, 7 to 8 not read: a line cut short): its "
        "request may be among them")
    assert said[1].cause == REQUEST  # a change a request was found for stands
