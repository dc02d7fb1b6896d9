"""`ctrlaudit witness` on the real CLI, in a subprocess: a witness run by another team co-signs a log's checkpoints
only along one history. It accepts the first checkpoint it sees and each proper extension (after which
`verify --witness-key` passes), and refuses, writing nothing, a split view (another tree of the same size, signed
by the log's own key), a checkpoint that does not extend its last, an old checkpoint replayed, a checkpoint of
another cluster or key; each refusal is exit 1 and one line, each bad input exit 2 and one line.

Histories: the archives of cluster sim-1 at 300, 500 and 700 events are one history (the same simulation, longer);
the fork is another history of sim-1 from seq 24 on, signed with the same key.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.ctrlaudit.test_bad_inputs import ctrlaudit, digest
from tests.ctrlaudit.test_exit_codes import one_line
from tests.signed_archives import log_and_witness_keys, signed_archive


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("witness")
    keys = log_and_witness_keys(root, witness="witness.example/other-team")
    (key, pub, log), (w_key, w_pub, _), evil = keys.log, keys.witness, keys.evil[2]
    made = {"root": root, "pub": pub, "log_key": key, "w_key": w_key, "w_pub": w_pub, "evil": evil}
    for name, events, kw in (("a300", 300, {}), ("a500", 500, {}), ("a700", 700, {}), ("fork300", 300, {"topics": 3}),
                             ("fork500", 500, {"topics": 3}), ("other", 300, {"seed": 2}), ("evil", 300, {})):
        made[name] = signed_archive(root / name, evil if name == "evil" else log, events, 100, **kw)
    return made


def _witness(world, state: Path, *targets: object, extra: tuple[str, ...] = ()):
    return ctrlaudit("witness", *map(str, targets), "--key", str(world["w_key"]), "--log-key", str(world["pub"]),
                     "--state", str(state), *extra)


def _copy(world, name: str, tmp: Path) -> Path:
    """A copy of one archive's cluster directory to witness (the witness adds its co-signature to it)."""
    dest = tmp / name / world[name].name
    shutil.copytree(world[name], dest)
    return dest


def _refused(done, says: str, *unchanged: Path, before: dict) -> None:
    one_line(done, 1, says)
    assert done.stdout == ""
    assert digest(*unchanged) == before


def test_one_history_witnessed_and_every_other_refused(world, tmp_path) -> None:
    state = tmp_path / "state"
    a300, a500, a700 = (_copy(world, n, tmp_path) for n in ("a300", "a500", "a700"))
    fork300, fork500 = _copy(world, "fork300", tmp_path), _copy(world, "fork500", tmp_path)

    # the first checkpoint seen is taken on the log's signature alone
    done = _witness(world, state, a300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "co-signed the checkpoint of 300 events of cluster sim-1: the first" in done.stdout
    assert "— witness.example/other-team " in (a300 / "checkpoint-000000000300.note").read_text()

    # a split view: the same size, another tree, signed by the log's own key
    before = digest(fork300, state)
    _refused(_witness(world, state, fork300), "a split view", fork300, state, before=before)

    # a history that does not extend the one witnessed
    before = digest(fork500, state)
    _refused(_witness(world, state, fork500), "does not extend the checkpoint of 300 events", fork500, state,
             before=before)

    # the proper extension: the consistency proof from 300 to 500 comes from the archive's merkle/ store
    done = _witness(world, state, a500)
    assert done.returncode == 0, done.stderr
    assert "it extends the one of 300 events co-signed before" in done.stdout
    verify = ctrlaudit("verify", str(a500.parent), "--trusted-key", str(world["pub"]), "--witness-key",
                       str(world["w_pub"]))
    assert verify.returncode == 0 and "witnessed to seq 499" in verify.stdout, verify.stdout + verify.stderr
    # ... while the fork, signed by the same log key, is not witnessed: a reader requiring the witness refuses it
    refused = ctrlaudit("verify", str(fork500.parent), "--trusted-key", str(world["pub"]), "--witness-key",
                        str(world["w_pub"]))
    assert refused.returncode == 1 and "no checkpoint co-signed by the witness key" in refused.stdout, refused.stdout

    # an old checkpoint replayed: the 300 one again, and a whole archive cut back to 300
    for old in (a300 / "checkpoint-000000000300.note", a300, a500 / "checkpoint-000000000200.note"):
        before = digest(old, state)
        _refused(_witness(world, state, old), "fewer than the checkpoint of 500 events", old, state, before=before)

    # witnessing again what was witnessed changes nothing
    before = digest(a500, state)
    done = _witness(world, state, a500)
    assert done.returncode == 0 and "is the one co-signed last" in done.stdout, done.stderr
    assert digest(a500, state) == before

    # an extension proven by a proof file made elsewhere (prove --from --to), co-signed note to --out
    proof, cosigned = tmp_path / "ext.json", tmp_path / "cosigned.note"
    done = ctrlaudit("prove", str(a700.parent), "--from", "500", "--to", "700", "--out", str(proof),
                     "--trusted-key", str(world["pub"]))
    assert done.returncode == 0, done.stderr
    done = _witness(world, state, proof, extra=("--out", str(cosigned), "--json", "-"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["witnessed"][0]["previous_tree_size"] == 500
    assert "— witness.example/other-team " in cosigned.read_text()
    assert (state / "sim-1.note").read_text() == cosigned.read_text()


def test_a_proof_file_must_start_where_the_witness_stands(world, tmp_path) -> None:
    state = tmp_path / "state"
    assert _witness(world, state, _copy(world, "a300", tmp_path)).returncode == 0
    proof = tmp_path / "ext.json"
    assert ctrlaudit("prove", str(world["a700"].parent), "--from", "500", "--to", "700", "--out", str(proof),
                     "--trusted-key", str(world["pub"])).returncode == 0
    before = digest(state)
    one_line(_witness(world, state, proof, extra=("--out", str(tmp_path / "c.note"))), 2,
             "--from 300 --to 700")
    assert digest(state) == before and not (tmp_path / "c.note").exists()
    # a proof file whose older checkpoint is another tree of the size witnessed: a split view
    fork_proof = tmp_path / "fork.json"
    assert ctrlaudit("prove", str(world["fork500"].parent), "--from", "300", "--to", "500", "--out", str(fork_proof),
                     "--trusted-key", str(world["pub"])).returncode == 0
    _refused(_witness(world, state, fork_proof, extra=("--out", str(tmp_path / "c.note"))), "a split view", state,
             before=before)


def test_checkpoints_of_another_cluster_or_key_are_refused(world, tmp_path) -> None:
    state = tmp_path / "state"
    a300 = _copy(world, "a300", tmp_path)
    # sim-2's newest checkpoint copied into sim-1's directory
    planted = a300 / "checkpoint-000000000400.note"
    shutil.copy(world["other"] / "checkpoint-000000000300.note", planted)
    before = digest(a300)
    _refused(_witness(world, state, a300), "copied from another cluster's archive", a300, before=before)
    planted.unlink()
    # a checkpoint signed by a key of the log's name that the witness does not trust
    evil = _copy(world, "evil", tmp_path)
    before = digest(evil)
    _refused(_witness(world, state, evil), "no signature by a trusted key", evil, before=before)
    assert not (state / "sim-1.note").exists()


def test_bad_inputs(world, tmp_path) -> None:
    state = tmp_path / "state"
    a300 = _copy(world, "a300", tmp_path)
    before = digest(a300)
    # the witness's key is the log's own
    one_line(ctrlaudit("witness", str(a300), "--key", str(world["log_key"]), "--log-key", str(world["pub"]),
                       "--state", str(state)), 2, "is the log's key")
    one_line(_witness(world, state, a300, tmp_path / "nothing"), 2, "nothing: no such file or directory")
    one_line(_witness(world, state, a300, a300, extra=("--out", str(tmp_path / "x.note"))), 2, "one target")
    one_line(_witness(world, state, tmp_path), 2, "no checkpoint-*.note here")
    assert digest(a300) == before
    # a state file edited by someone else: refused, not trusted
    assert _witness(world, state, a300).returncode == 0
    kept = state / "sim-1.note"
    kept.write_text(kept.read_text().replace("\n300\n", "\n30\n"))
    one_line(_witness(world, state, a300), 2, "not a checkpoint co-signed by this witness's key")
