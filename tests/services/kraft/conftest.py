"""Every data batch any test here decodes goes through both paths: the native one
(services.kraft.native, when built) and the Python one (records.decode_data_batch, the reference),
and the two must give the same records, record by record, or the same error. So every log these
tests make (and the real clusters' logs in test_real_kafka) checks the native path too."""

from __future__ import annotations

import pytest

from services.kraft import KRaftError, native, records

from .helpers import record_view

REFERENCE = records.decode_data_batch  # as imported: tests may patch the module's name


def _outcome(decode, buf, b, on_error):
    try:
        return [record_view(r) for r in decode(buf, b, on_error=on_error)]
    except KRaftError as e:
        return (type(e).__name__, str(e))


@pytest.fixture(autouse=True)
def native_equals_python(monkeypatch):
    if not native.built():
        yield
        return
    native_decode = native.decode_data_batch

    def both(buf, b, *, on_error="raise"):
        # native first: a fallback inside it logs any warning before the reference run does
        got = _outcome(native_decode, buf, b, on_error)
        assert got == _outcome(REFERENCE, buf, b, on_error), b
        return native_decode(buf, b, on_error=on_error)

    monkeypatch.setattr(native, "decode_data_batch", both)
    yield
