"""C2SP signed notes: Go's golang.org/x/mod/sumdb/note vectors, the C2SP spec's example, then bad input."""
from __future__ import annotations

import pytest

from schemas.archive.note import (
    MAX_SIGNATURES,
    NoteError,
    Signature,
    Signer,
    Verifier,
    cosign_note,
    generate_key,
    key_id,
    open_note,
    parse_note,
    sign_note,
)
from schemas.errors import ContractError

# golang.org/x/mod sumdb/note/note_test.go (TestNewVerifier, TestNewSigner, TestSign, TestOpen)
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
PETER_SIG = "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
ENOCH_SIG = "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"
# golang.org/x/mod sumdb/client_test.go: a key whose ID has leading zeroes, and a tree note it signed
SUMDB_SKEY = "PRIVATE+KEY+localhost.localdev/sumdb+00000c67+AXu6+oaVaOYuQOFrf1V59JK1owcFlJcHwwXHDfDGxSPk"
SUMDB_VKEY = "localhost.localdev/sumdb+00000c67+AcTrnkbUA+TU4heY3hkjiSES/DSQniBqIeQ/YppAUtK6"
SUMDB_TREE = ("go.sum database tree\n6\nwc4SkQt52o5W2nQ8To2ARs+mWuUJjss+sdleoiqxMmM=\n\n"
              "— localhost.localdev/sumdb AAAMZ6oRNswlEZ6ZZhxrCvgl1MBy+nusq4JU+TG6Fe2NihWLqOzb+y2c2kzRLoCr4tvw9o36ucQEnhc20e4nA4Qc/wc=\n")
# C2SP signed-note.md, "Verifier keys", Example
C2SP_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
C2SP_NOTE = ("This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYj"
             "OBH3mFXmRKuwHjG1Yu72IneyaQM=\n")

PETER, ENOCH = Verifier.parse(PETER_VKEY), Verifier.parse(ENOCH_VKEY)


def test_go_keys() -> None:
    signer = Signer.parse(PETER_SKEY)
    assert (signer.name, signer.key_id) == ("PeterNeumann", 0xC74F20A3)
    assert signer.verifier == PETER and PETER.text == PETER_VKEY and signer.text == PETER_SKEY
    assert key_id("PeterNeumann", PETER.public_key) == 0xC74F20A3
    sumdb = Signer.parse(SUMDB_SKEY)
    assert sumdb.verifier.text == SUMDB_VKEY and sumdb.key_id == 0xC67 and sumdb.text == SUMDB_SKEY


def test_go_sign_is_byte_exact() -> None:
    # Ed25519 is deterministic: the same key and text give Go's exact signature line
    assert sign_note(TEXT, Signer.parse(PETER_SKEY)) == TEXT + "\n" + PETER_SIG
    assert sign_note(SUMDB_TREE.split("\n\n")[0] + "\n", Signer.parse(SUMDB_SKEY)) == SUMDB_TREE


def test_go_open() -> None:
    msg = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    note = open_note(msg, [PETER])
    assert note.text == TEXT
    assert [(s.name, s.key_id) for s in note.signatures] == [("PeterNeumann", 0xC74F20A3)]
    assert [(s.name, s.key_id) for s in note.unverified] == [("EnochRoot", 0xAF0CFE78)]
    both = open_note(msg.encode(), [PETER, ENOCH, ENOCH])
    assert [s.name for s in both.signatures] == ["PeterNeumann", "EnochRoot"] and not both.unverified
    assert both.signatures[0].line == PETER_SIG and both.signatures[1].line == ENOCH_SIG
    with pytest.raises(NoteError, match="no signature by a trusted key .signed by PeterNeumann.c74f20a3, EnochRoot"):
        open_note(msg, [])
    # a trusted key's signature that does not verify refuses the whole note, even beside a good one
    bad = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(NoteError, match="the signature by PeterNeumann.c74f20a3 does not verify"):
        open_note(TEXT + "\n" + bad, [PETER])
    with pytest.raises(NoteError, match="does not verify"):
        open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG[:60] + "ABCD" + ENOCH_SIG[60:], [PETER, ENOCH])
    # the same signature twice, and an unknown key's bad signature, are harmless
    note = open_note(TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG, [PETER])
    assert len(note.signatures) == 1 and len(note.unverified) == 1


def test_c2sp_example_and_sumdb_tree() -> None:
    note = open_note(C2SP_NOTE, [Verifier.parse(C2SP_VKEY)])
    assert note.text == "This is an example message.\n" and note.signatures[0].key_id == 0x530D903A
    assert open_note(SUMDB_TREE, [Verifier.parse(SUMDB_VKEY)]).text.startswith("go.sum database tree\n6\n")


def test_unknown_keys_ignored_even_sharing_name_or_id() -> None:
    # a key with Peter's name (or his ID) but another key material: its signature is not Peter's
    skey, vkey = generate_key("PeterNeumann")
    other = Verifier.parse(vkey)
    msg = TEXT + "\n" + PETER_SIG
    with pytest.raises(NoteError, match="no signature by a trusted key"):
        open_note(msg, [other])
    forged = cosign_note(msg, Signer.parse(skey))
    assert [s.name for s in open_note(forged, [PETER]).signatures] == ["PeterNeumann"]
    assert [s.key_id for s in open_note(forged, [PETER]).unverified] == [other.key_id]


def test_generate_key_and_cosign() -> None:
    log_skey, log_vkey = generate_key("ctrlaudit.example/log")
    w_skey, w_vkey = generate_key("witness.example/w1")
    log, witness = Verifier.parse(log_vkey), Verifier.parse(w_vkey)
    assert Signer.parse(log_skey).verifier == log
    msg = sign_note("ctrlaudit.example/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n", Signer.parse(log_skey))
    cosigned = cosign_note(msg, Signer.parse(w_skey))
    assert cosigned.startswith(msg)
    note = open_note(cosigned, [log, witness])
    assert [s.name for s in note.signatures] == ["ctrlaudit.example/log", "witness.example/w1"]
    # co-signing again replaces the witness's signature rather than adding a second one
    assert cosign_note(cosigned, Signer.parse(w_skey)).count("witness.example/w1") == 1
    # the seed stays out of reprs and logs
    assert log_skey.split("+", 4)[4] not in repr(Signer.parse(log_skey))  # PRIVATE+KEY+name+hash+key: the key may hold "+"


@pytest.mark.parametrize("vkey", [
    "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",  # Go: wrong length key
    "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # Go: unknown algorithm
    "PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # hex must be lowercase
    "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW=",
    "PeterNeumann+c74f20a3",
    "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    "+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    "PeterNeumann+c74f20a3+",
])
def test_bad_verifier_keys(vkey: str) -> None:
    with pytest.raises(NoteError, match="verifier key"):
        Verifier.parse(vkey)


def test_go_key_manglings_refused() -> None:
    # Go's TestNewVerifier and TestNewSigner: every proper substring, and every byte incremented, is refused
    for key, parse in ((PETER_VKEY, Verifier.parse), (PETER_SKEY, Signer.parse)):
        for i in range(len(key) + 1):
            for j in range(i + 1, len(key) + 1):
                if (i, j) != (0, len(key)):
                    with pytest.raises(NoteError):
                        parse(key[i:j])
        for i in range(len(key)):
            with pytest.raises(NoteError):
                parse(key[:i] + chr(ord(key[i]) + 1) + key[i + 1:])


@pytest.mark.parametrize("msg,reason", [
    (TEXT, "no blank line"),  # Go's badMsgs, in order
    (TEXT + "\n", "no signature lines"),
    (TEXT + "\n" + PETER_SIG[:-1], "does not end with a newline"),
    ("\x01" + TEXT + "\n" + PETER_SIG, "control character"),
    (b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), "not UTF-8"),
    ("\ud800" + TEXT + "\n" + PETER_SIG, "not UTF-8 .a lone surrogate"),
    (TEXT + "\n" + "— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=",
     "does not end with a newline"),
    (TEXT + "\n" + "— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
     "expected '— <key name> <base64 signature>'"),
    (TEXT + "\n" + PETER_SIG + "Unexpected line.\n", "signature line 5 does not start with '— '"),
    (TEXT + "\n" + "- PeterNeumann " + PETER_SIG.split(" ")[2], "does not start with '— '"),
    (TEXT + "\n" + "— Peter+Neumann " + PETER_SIG.split(" ")[2], "contains '\\+'"),
    (TEXT + "\n" + "— PeterNeumann x08go/ZJkuBS9UG\n", "not base64"),
    (TEXT + "\n" + "— PeterNeumann x08g\n", "3 bytes, expected a 4-byte key ID"),
    (TEXT + "\n" + PETER_SIG.replace("AM=", "AN="), "not canonical base64"),
    (TEXT + "\r\n" + PETER_SIG, "control character '\\\\r'"),
    (TEXT + "\n" + PETER_SIG * (MAX_SIGNATURES + 1), "101 signatures, at most 100"),
])
def test_malformed_notes(msg: str | bytes, reason: str) -> None:
    with pytest.raises(NoteError, match=reason) as err:
        open_note(msg, [PETER])
    assert "\n" not in str(err.value)  # one line
    assert isinstance(err.value, ContractError)


def test_parse_note_takes_the_last_blank_line() -> None:
    text = "para one\n\npara two\n"
    msg = sign_note(text, Signer.parse(PETER_SKEY))
    assert parse_note(msg)[0] == text and open_note(msg, [PETER]).text == text
    assert isinstance(parse_note(msg)[1][0], Signature)


def test_sign_refuses_bad_text_and_names() -> None:
    signer = Signer.parse(PETER_SKEY)
    with pytest.raises(NoteError, match="does not end with a newline"):
        sign_note("abc", signer)
    with pytest.raises(NoteError, match="at least one signer"):
        sign_note(TEXT)
    with pytest.raises(NoteError, match="contains ' '"):
        generate_key("bad name")
    with pytest.raises(NoteError, match="malformed signer key"):
        Signer.parse(PETER_VKEY)


def test_ambiguous_trusted_keys_refused() -> None:
    _, vkey = generate_key("PeterNeumann")
    clash = Verifier("PeterNeumann", PETER.key_id, Verifier.parse(vkey).public_key)
    with pytest.raises(NoteError, match="ambiguous trusted keys"):
        open_note(TEXT + "\n" + PETER_SIG, [PETER, clash])
