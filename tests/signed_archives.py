"""Signed archives for the tests of proofs and witnesses: key files as `ctrlaudit keygen` writes them, and simulated
archives whose writer signs a checkpoint at every finished file."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.archive.note import Signer, generate_key
from services.simulator import SimConfig, simulate_to_archive


def keypair(directory: Path, name: str, file: str) -> tuple[Path, Path, Signer]:
    """(private key file, public key file, signer) of a new key named `name`."""
    skey, vkey = generate_key(name)
    key, pub = directory / file, directory / (file + ".pub")
    key.write_text(skey + "\n")
    os.chmod(key, 0o600)
    pub.write_text(vkey + "\n")
    return key, pub, Signer.parse(skey)


@dataclass(frozen=True)
class Keys:
    """A log's key, an impostor's key of the same name, and a witness's key: each (private key file, public key
    file, signer), as keypair gives them."""

    log: tuple[Path, Path, Signer]
    evil: tuple[Path, Path, Signer]
    witness: tuple[Path, Path, Signer]


def log_and_witness_keys(directory: Path, witness: str = "witness.example/w") -> Keys:
    """The keys the proof and witness tests play with: log.key and evil.key (both named log.example/prod: the evil
    one signs as the log would) and witness.key named `witness`."""
    return Keys(keypair(directory, "log.example/prod", "log.key"), keypair(directory, "log.example/prod", "evil.key"),
                keypair(directory, witness, "witness.key"))


def signed_archive(root: Path, signer: Signer, events: int, per_file: int, seed: int = 1, topics: int = 2,
                   **writer: Any) -> Path:
    """A simulated archive under `root`, signed by `signer` at every `per_file` events; its cluster directory.
    The same seed with another number of topics is another history of the same cluster id (a fork)."""
    sim = SimConfig(seed=seed, events=events, topics=topics, partitions=3)
    simulate_to_archive(root, sim, max_events_per_file=per_file, signers=[signer], fsync=False, **writer)
    return root / sim.cluster


def digest(*paths: Path) -> dict[str, str]:
    """sha256 of every file under the paths: what "nothing changed" compares."""
    out = {}
    for root in paths:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        out.update({str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files})
    return out
