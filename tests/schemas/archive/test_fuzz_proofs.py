"""Fuzzing the reader of proof files (tests/fuzzing.py says how long and why): damaged proof documents and any JSON
in any field end in an error the CLI says in one line with exit 1 or 2, never in a bug, and never in a proof that
holds."""
from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from schemas.archive.proofs import parse_proof, verify_proof
from schemas.archive.prover import consistency, inclusion, read_log
from schemas.archive.signatures import Trust
from tests.fuzzing import fuzz_settings, hostile, only_contract_errors
from tests.signed_archives import keypair, signed_archive


@cache
def samples() -> tuple[Trust, bytes, bytes]:
    """(trust, an inclusion proof, a consistency proof) of a small signed archive, made once."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-proofs-"))
    _, _, log = keypair(root, "log.example/fuzz", "log.key")
    signed_archive(root / "a", log, 40, 10)
    trust = Trust((log.verifier,))
    with read_log([root / "a"], trust, seq=17) as made:
        inc = inclusion(made, trust, at=30).json.encode()
    with read_log([root / "a"], trust) as made:
        con = consistency(made, trust, 10, 40).json.encode()
    return trust, inc, con


def _holds_only_unchanged(data: bytes) -> None:
    trust, inc, con = samples()
    proven = only_contract_errors(lambda: verify_proof(parse_proof(data), trust))
    if proven is not None:  # a damaged proof that still holds proves what the original proves, or it is a bug
        original = verify_proof(parse_proof(inc if proven.kind == "inclusion" else con), trust)
        assert proven == original


def test_the_samples_hold() -> None:
    trust, inc, con = samples()
    assert verify_proof(parse_proof(inc), trust).seq == 17
    assert verify_proof(parse_proof(con), trust).old_size == 10


@fuzz_settings(ci_examples=400)
@given(data=st.one_of(hostile(samples()[1]), hostile(samples()[2])))
def test_fuzz_a_damaged_proof_file(data: bytes) -> None:
    _holds_only_unchanged(data)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=80),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=4), max_leaves=12)


@fuzz_settings(ci_examples=400)
@given(which=st.sampled_from(["inclusion", "consistency"]), data=st.data())
def test_fuzz_any_json_in_any_field(which: str, data: st.DataObject) -> None:
    _, inc, con = samples()
    doc = json.loads(inc if which == "inclusion" else con)
    paths = [(k,) for k in doc] + [("event", k) for k in doc.get("event", {})]
    path = data.draw(st.sampled_from(paths))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = data.draw(JSON)
    _holds_only_unchanged(json.dumps(doc).encode())
