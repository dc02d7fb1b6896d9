"""copy_live_directory: a log directory copied while the broker renames and deletes files in it."""
from __future__ import annotations

import os
import shutil

import pytest

from devtools.cluster.testing import copy_live_directory


def _log_dir(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.index",
                 "00000000000000002009-0000000007.checkpoint",
                 "00000000000000003000-0000000007.checkpoint.part",
                 "00000000000000001000.log.deleted", "00000000000000001000.log.swap"):
        (d / name).write_bytes(name.encode())
    return d


def test_files_in_flight_are_left_out(tmp_path):
    copied = copy_live_directory(_log_dir(tmp_path), tmp_path / "copy")
    assert sorted(p.name for p in copied.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log",
        "00000000000000002009-0000000007.checkpoint"]


def test_a_file_vanishing_between_listing_and_copy_is_not_an_error(tmp_path, monkeypatch):
    d = _log_dir(tmp_path)
    copy2 = shutil.copy2

    def broker_deletes_first(src, dst, **kw):  # the broker deletes a segment mid-copy
        if os.fspath(src).endswith(".index"):
            (d / "00000000000000000000.index").unlink()
        return copy2(src, dst, **kw)

    monkeypatch.setattr(shutil, "copy2", broker_deletes_first)
    copied = copy_live_directory(d, tmp_path / "copy")
    assert sorted(p.name for p in copied.iterdir()) == [
        "00000000000000000000.log", "00000000000000002009-0000000007.checkpoint"]


def test_other_copy_failures_still_raise(tmp_path, monkeypatch):
    d = _log_dir(tmp_path)

    def disk_full(src, dst, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copy2", disk_full)
    with pytest.raises(shutil.Error, match="No space left"):
        copy_live_directory(d, tmp_path / "copy")
