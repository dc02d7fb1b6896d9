"""The Spark job checks signed checkpoints on the driver, in the read it verifies the archive with: a signed archive
is checked, a re-chained one is refused before Spark reads a row, for a local path and a Hadoop URI alike."""
from __future__ import annotations

from pathlib import Path

import pytest

from ctrlaudit.check_run import run_check
from schemas.archive.note import Signer, Verifier, generate_key
from schemas.archive.signatures import Trust
from services.simulator import SimConfig, simulate_to_archive
from tests.schemas.archive import forgery

pytestmark = pytest.mark.spark

CL = "sim-61"


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Trust]:
    root = tmp_path_factory.mktemp("spark-signed")
    skey, vkey = generate_key("log.test/spark")
    simulate_to_archive(root / "signed", SimConfig(seed=61, events=3000, cluster_id=CL), max_events_per_file=1000,
                        fsync=False, signers=[Signer.parse(skey)])
    forged = forgery.rechained(root / "signed" / CL, root / "forged", forgery.edited(2100), 1000)
    return root / "signed", forged, Trust((Verifier.parse(vkey),))


def test_the_spark_job_checks_a_signed_archive_and_refuses_a_rechained_one(spark, archives, capsys) -> None:
    signed, forged, trust = archives
    some = ["leader_in_isr"]
    for given in (signed, signed.resolve().as_uri()):
        assert run_check([given], engine="spark", spark=spark, invariants=some, trust=trust) == 0
    capsys.readouterr()
    for given in (forged, forged.resolve().as_uri()):
        assert run_check([given], engine="spark", spark=spark, invariants=some) == 0  # the chain alone passes it
        assert run_check([given], engine="spark", spark=spark, invariants=some, trust=trust) == 1
        err = capsys.readouterr().err
        assert "checkpoint-0000000" in err and ": signature: " in err and "Traceback" not in err
