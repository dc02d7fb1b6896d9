import pytest

from services.kraft import LogReader, TransactionBuffer, TransactionError

from .helpers import data_batch, metadata_value, pcr


def _begin(name="t"):
    return metadata_value("BeginTransactionRecord", 0, {"name": name})


END = metadata_value("EndTransactionRecord", 0, {})


def _abort(reason="r"):
    return metadata_value("AbortTransactionRecord", 0, {"reason": reason})


def _records(tmp_path, values):
    f = tmp_path / "x.log"
    f.write_bytes(data_batch(values))
    return list(LogReader(f))


def test_committed_transaction_is_released_at_end(tmp_path):
    recs = _records(tmp_path, [pcr(0), _begin("Bootstrap records"), pcr(1), pcr(2), END, pcr(3)])
    tb = TransactionBuffer()
    released = [tb.feed(r) for r in recs]
    assert [len(x) for x in released] == [1, 0, 0, 0, 4, 1]
    assert [r.offset for r in released[4]] == [1, 2, 3, 4]
    assert not tb.in_transaction and tb.aborted == []


def test_aborted_transaction_is_dropped_and_reported(tmp_path):
    recs = _records(tmp_path, [_begin("x"), pcr(1), _abort("controller failover"), pcr(2)])
    tb = TransactionBuffer()
    out = tb.feed_all(recs)
    assert [r.offset for r in out] == [3]
    (ab,) = tb.aborted
    assert (ab.name, ab.reason, [r.offset for r in ab.records]) == ("x", "controller failover", [1])


def test_open_transaction_at_end_of_input_stays_pending(tmp_path):
    tb = TransactionBuffer()
    assert tb.feed_all(_records(tmp_path, [_begin(), pcr(1)])) == []
    assert tb.in_transaction and len(tb.pending) == 2


@pytest.mark.parametrize("values,msg", [
    ([END], "without a BeginTransactionRecord"),
    ([_abort()], "without a BeginTransactionRecord"),
    ([_begin(), _begin()], "inside the transaction"),
])
def test_out_of_order_markers(tmp_path, values, msg):
    with pytest.raises(TransactionError, match=msg) as e:
        TransactionBuffer().feed_all(_records(tmp_path, values))
    assert e.value.record_offset is not None
