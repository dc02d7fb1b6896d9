"""cut_partial_tails: a copied segment ending inside a batch is cut back to its last whole batch."""
from __future__ import annotations

from devtools.cluster.testing import cut_partial_tails
from tests.services.kraft.helpers import data_batch, pcr


def test_half_a_batch_at_the_end_is_cut_and_whole_batches_stay(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    first = data_batch([pcr(0), pcr(1)], base_offset=0)
    second = data_batch([pcr(2)], base_offset=2)
    (d / "00000000000000000000.log").write_bytes(first + second[: len(second) // 2])
    whole = data_batch([pcr(3)], base_offset=100)
    (d / "00000000000000000100.log").write_bytes(whole)
    cut_partial_tails(d)
    assert (d / "00000000000000000000.log").read_bytes() == first
    assert (d / "00000000000000000100.log").read_bytes() == whole  # ends on a batch: untouched
