"""Storing a checkpoint signed elsewhere (capture's, through the archiver): written whole, never overwritten, its
signatures joined to a checkpoint of the same tree already there, refused for another tree of the same size."""
from __future__ import annotations

import os

import pytest

from schemas.archive.checkpoint import Checkpoint
from schemas.archive.note import Signer, generate_key, parse_note, sign_note
from schemas.archive.signed import SigningError, checkpoint_name, store_note, write_checkpoint

A = Signer.parse(generate_key("a.example/log")[0])
B = Signer.parse(generate_key("b.example/log")[0])
CP = Checkpoint("ctrlaudit/c1", 7, b"\x01" * 32)


def test_a_note_is_stored_as_it_is_and_once(tmp_path):
    note = sign_note(CP.text, A)
    path = store_note(tmp_path, note, fsync=False)
    assert path.name == checkpoint_name(7) and path.read_text() == note
    mtime = os.stat(path).st_mtime_ns
    assert store_note(tmp_path, note, fsync=False) == path and os.stat(path).st_mtime_ns == mtime
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_signatures_of_other_keys_join_and_one_already_there_is_kept(tmp_path):
    write_checkpoint(tmp_path, CP, [A], fsync=False)
    old = (tmp_path / checkpoint_name(7)).read_text()
    store_note(tmp_path, sign_note(CP.text, B, A), fsync=False)
    text, sigs = parse_note((tmp_path / checkpoint_name(7)).read_text())
    assert text == CP.text and [s.name for s in sigs] == [A.name, B.name]
    assert (tmp_path / checkpoint_name(7)).read_text().startswith(old)  # A's line as it was


def test_another_tree_of_the_same_size_is_refused_and_nothing_changes(tmp_path):
    store_note(tmp_path, sign_note(CP.text, A), fsync=False)
    before = (tmp_path / checkpoint_name(7)).read_bytes()
    other = Checkpoint("ctrlaudit/c1", 7, b"\x02" * 32)
    with pytest.raises(SigningError, match="already signs a different tree of 7 events"):
        store_note(tmp_path, sign_note(other.text, B), fsync=False)
    assert (tmp_path / checkpoint_name(7)).read_bytes() == before
