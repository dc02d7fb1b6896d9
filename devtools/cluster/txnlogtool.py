"""Parser for what ZooKeeper's TxnLogToolkit prints (``TxnLogToolkit -d FILE``), so tests can compare
``services.zookeeper`` with ZooKeeper's own reader transaction by transaction, field by field.

One transaction is one line ``<date>, <time> <zone> session 0x.. cxid 0x.. zxid 0x.. <op> <record>``;
the record is jute's CSV of the transaction (an ACL vector prints a newline, so a transaction can span
lines: a line that does not start a new one continues the last). A multi prints its sub-transactions
as ``<op>:<raw bytes>`` joined by ``;``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

_START = re.compile(r"^(?P<when>\d{1,2}/\d{1,2}/\d{2}, \d{1,2}:\d{2}:\d{2}\s[AP]M \S+) session 0x(?P<session>[0-9a-f]+) "
                    r"cxid 0x(?P<cxid>[0-9a-f]+) zxid 0x(?P<zxid>[0-9a-f]+) (?P<op>\w+)(?: (?P<rest>.*))?$", re.S)
_HEADER = re.compile(r"^ZooKeeper Transactional Log File with dbid (-?\d+) txnlog format version (\d+)")
_END = re.compile(r"^EOF reached after (\d+) txns\.")
_SUB_OP = re.compile(r"(?:^|;)([a-zA-Z]+\d?):")


@dataclass(frozen=True)
class ToolkitTxn:
    when: str  # as printed, second resolution in the JVM's zone
    session: int
    cxid: int
    zxid: int
    op: str
    rest: str  # the record as printed

    @property
    def epoch_seconds(self) -> int:
        when = self.when.replace("\u202f", " ")
        stamp, zone = when.rsplit(" ", 1)
        if zone not in ("UTC", "GMT"):
            raise ValueError(f"run TxnLogToolkit with -Duser.timezone=UTC (it printed zone {zone})")
        return int(datetime.strptime(stamp, "%m/%d/%y, %I:%M:%S %p").replace(tzinfo=timezone.utc).timestamp())

    @property
    def sub_ops(self) -> list[str]:
        """A multi's sub-transaction names, in order."""
        return _SUB_OP.findall(self.rest)


@dataclass(frozen=True)
class ToolkitDump:
    dbid: int
    version: int
    txns: list[ToolkitTxn]
    eof_count: int | None  # "EOF reached after N txns." (None: the tool stopped before, e.g. on a CRC error)


def parse(text: str) -> ToolkitDump:
    dbid = version = -1
    eof = None
    chunks: list[str] = []
    for line in text.split("\n"):
        if (m := _HEADER.match(line)) is not None:
            dbid, version = int(m.group(1)), int(m.group(2))
        elif (m := _END.match(line)) is not None:
            eof = int(m.group(1))
        elif _START.match(line.split("\n")[0]) and " session 0x" in line:
            chunks.append(line)
        elif chunks:
            chunks[-1] += "\n" + line
    txns = []
    for c in chunks:
        m = _START.match(c)
        txns.append(ToolkitTxn(m["when"], int(m["session"], 16), int(m["cxid"], 16), int(m["zxid"], 16), m["op"],
                               (m["rest"] or "").rstrip("\n")))
    return ToolkitDump(dbid, version, txns, eof)


def compare(ours, theirs: ToolkitTxn) -> list[str]:
    """Fields where our ``services.zookeeper.Txn`` and TxnLogToolkit's line disagree (empty: none)."""
    diffs = []
    for name, a, b in (("session", ours.session, theirs.session), ("cxid", ours.cxid & 0xFFFFFFFF, theirs.cxid),
                       ("zxid", ours.zxid, theirs.zxid), ("type", ours.kind, theirs.op),
                       ("time (s)", ours.time // 1000, theirs.epoch_seconds)):
        if a != b:
            diffs.append(f"{name}: ours {a!r}, TxnLogToolkit {b!r}")
    rest = theirs.rest
    if ours.kind == "multi":
        if [o.kind for o in ours.ops] != theirs.sub_ops:
            diffs.append(f"multi ops: ours {[o.kind for o in ours.ops]}, TxnLogToolkit {theirs.sub_ops}")
        for o in ours.ops:
            if o.path is not None and o.path not in rest:
                diffs.append(f"multi path {o.path!r} not in {rest[:200]!r}")
            if o.data and o.data.decode("utf-8", "replace") not in rest:
                diffs.append(f"multi data of {o.path!r} not in {rest[:200]!r}")
        return diffs
    op = ours.ops[0]
    if op.kind in ("create", "create2", "createContainer", "createTTL", "setData"):
        want = f"{op.path},{(op.data or b'').decode('utf-8', 'replace')},"
        if not rest.startswith(want):
            diffs.append(f"record: ours starts {want[:200]!r}, TxnLogToolkit {rest[:200]!r}")
        if op.kind == "create" and not rest.endswith(f",{str(op.ephemeral).lower()},{rest.rsplit(',', 1)[-1]}"):
            diffs.append(f"ephemeral: ours {op.ephemeral}, TxnLogToolkit {rest[-40:]!r}")
        if op.kind == "setData" and rest.rsplit(",", 1)[-1] != str(op.version):
            diffs.append(f"version: ours {op.version}, TxnLogToolkit {rest.rsplit(',', 1)[-1]!r}")
    elif op.kind in ("delete", "deleteContainer"):
        if rest != op.path:
            diffs.append(f"path: ours {op.path!r}, TxnLogToolkit {rest!r}")
    elif op.kind == "error":
        if rest != str(op.error):
            diffs.append(f"error: ours {op.error}, TxnLogToolkit {rest!r}")
    elif op.kind == "createSession":
        if rest != str(op.session_timeout):
            diffs.append(f"session timeout: ours {op.session_timeout}, TxnLogToolkit {rest!r}")
    return diffs
