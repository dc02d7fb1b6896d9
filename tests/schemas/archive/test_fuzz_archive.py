"""Fuzzing the one verified read of archives (schemas.archive.verified) and the manifest parser: container files
(null and deflate codecs) damaged and read with the native decoder and the pure-Python one
(CTRLAUDIT_NATIVE=0), manifests damaged as bytes and as JSON (a value of another type, an extreme number,
a key more or less), and random bytes. Only the project's contract errors may escape (tests/fuzzing.py,
which also says how to run longer)."""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.archive import fastflat
from schemas.archive.manifest import MANIFEST_SUFFIX, read_manifest
from schemas.archive.verified import verify
from services.simulator import SimConfig, Simulation
from tests.archive_files import write_archive_file
from tests.fuzzing import EXTREMES, fuzz_settings, hostile, only_contract_errors

PATHS = ["python"] + (["native"] if fastflat.chain_available() else [])
NAME = "events-20250101T00-000000000000.avro"


def _sample(codec: str) -> tuple[bytes, str]:
    """A valid archive file of 40 simulated events and its manifest's text."""
    events = list(Simulation(SimConfig(seed=3, events=40, topics=2, partitions=2, cluster_id="c")).events())
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / NAME
        write_archive_file(f, events, codec=codec, sync_interval=2048)  # several blocks per file
        return f.read_bytes(), Path(str(f) + MANIFEST_SUFFIX).read_text()


SAMPLES = {codec: _sample(codec) for codec in ("null", "deflate")}


@contextmanager
def decoder(path: str):
    """The native decoder, or the pure-Python one (as without the C extension)."""
    old = os.environ.get("CTRLAUDIT_NATIVE")
    os.environ["CTRLAUDIT_NATIVE"] = "1" if path == "native" else "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["CTRLAUDIT_NATIVE"]
        else:
            os.environ["CTRLAUDIT_NATIVE"] = old


def verify_archive(avro: bytes, manifest: str | bytes, path: str, allow_gaps: bool = False) -> None:
    with tempfile.TemporaryDirectory() as d, decoder(path):
        (Path(d) / NAME).write_bytes(avro)
        m = Path(d) / (NAME + MANIFEST_SUFFIX)
        m.write_bytes(manifest) if isinstance(manifest, bytes) else m.write_text(manifest)
        only_contract_errors(lambda: verify([d], allow_gaps=allow_gaps, workers=1))


@pytest.mark.parametrize("path", PATHS)
def test_the_samples_verify(path):
    for avro, manifest in SAMPLES.values():
        with tempfile.TemporaryDirectory() as d, decoder(path):
            (Path(d) / NAME).write_bytes(avro)
            (Path(d) / (NAME + MANIFEST_SUFFIX)).write_text(manifest)
            assert verify([d], workers=1).chains["c"].verified_to == 39


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("codec", ["null", "deflate"])
@fuzz_settings(ci_examples=500)
@given(data=st.data())
def test_fuzz_a_damaged_container_file(path, codec, data):
    avro, manifest = SAMPLES[codec]
    verify_archive(data.draw(hostile(avro)), manifest, path, allow_gaps=data.draw(st.booleans()))


# --- manifests --------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.sampled_from(EXTREMES + [-(2**63), 2**64, 10**400]) | st.floats()
    | st.text(max_size=20) | st.sampled_from(["", "../../etc/passwd", "/dev/zero", "x" * 5000]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


@st.composite
def edited_manifest(draw: st.DrawFn, text: str) -> str:
    """The manifest as JSON with a few keys given other values, dropped or added."""
    d = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(d) + ["first_source", "last_source", "extra"]))
        action = draw(st.sampled_from(["set", "set", "drop", "nested"]))
        if action == "drop":
            d.pop(key, None)
        elif action == "nested" and isinstance(d.get(key), dict):
            d[key][draw(st.sampled_from(["kind", "offset", "index", "x"]))] = draw(JSON_VALUES)
        else:
            d[key] = draw(JSON_VALUES)
    return json.dumps(d)


@pytest.mark.parametrize("path", PATHS)
@fuzz_settings(ci_examples=400)
@given(data=st.data())
def test_fuzz_a_damaged_manifest(path, data):
    avro, manifest = SAMPLES["null"]
    damaged = data.draw(st.one_of(edited_manifest(manifest), hostile(manifest.encode(), random_size=512)))
    verify_archive(avro, damaged, path, allow_gaps=data.draw(st.booleans()))


@fuzz_settings(ci_examples=500)
@given(text=st.one_of(edited_manifest(SAMPLES["null"][1]), hostile(SAMPLES["null"][1].encode(), 512)))
def test_fuzz_the_manifest_parser(text):
    with tempfile.TemporaryDirectory() as d:
        m = Path(d) / (NAME + MANIFEST_SUFFIX)
        m.write_bytes(text) if isinstance(text, bytes) else m.write_text(text)
        only_contract_errors(lambda: read_manifest(m))
