// Command goverify checks a ctrlaudit proof file (ctrlaudit prove) with other people's implementations: the
// RFC 6962/9162 proofs with github.com/transparency-dev/merkle, the C2SP signed note and checkpoint with
// golang.org/x/mod/sumdb/note and github.com/transparency-dev/formats/log. It shares no code with ctrlaudit, so a
// proof it accepts is one the formats themselves define, not one ctrlaudit merely agrees with itself about.
//
//	goverify -key LOGVKEY [-witness WVKEY]... PROOF.json
//
// Prints one line starting "OK " and exits 0 when the proof holds; one line and exit 1 otherwise.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

type event struct {
	Hash     string          `json:"hash"`
	PrevHash string          `json:"prev_hash"`
	Schema   string          `json:"schema"`
	Body     []byte          `json:"body"` // encoding/json reads standard base64 into []byte
	Decoded  json.RawMessage `json:"decoded"`
}

type document struct {
	Format          string   `json:"format"`
	Version         int      `json:"version"`
	Kind            string   `json:"kind"`
	Index           *uint64  `json:"index"`
	Event           *event   `json:"event"`
	AuditPath       [][]byte `json:"audit_path"`
	Checkpoint      string   `json:"checkpoint"`
	OldCheckpoint   string   `json:"old_checkpoint"`
	NewCheckpoint   string   `json:"new_checkpoint"`
	ConsistencyPath [][]byte `json:"consistency_path"`
}

type keys []string

func (k *keys) String() string     { return strings.Join(*k, ",") }
func (k *keys) Set(v string) error { *k = append(*k, v); return nil }

// avroPrefix reads the first fields of a ControllerEvent body (schema v1: event_id string, cluster_id string,
// seq long), Avro binary: a string is a zigzag varint length and the bytes, a long a zigzag varint.
type avroPrefix struct {
	data []byte
	at   int
}

func (a *avroPrefix) long() (int64, error) {
	var n uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if a.at >= len(a.data) {
			return 0, errors.New("body ends inside a long")
		}
		b := a.data[a.at]
		a.at++
		n |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return int64(n>>1) ^ -int64(n&1), nil
		}
	}
	return 0, errors.New("body holds an overlong varint")
}

func (a *avroPrefix) str() (string, error) {
	n, err := a.long()
	if err != nil {
		return "", err
	}
	if n < 0 || int64(len(a.data)-a.at) < n {
		return "", errors.New("body ends inside a string")
	}
	s := string(a.data[a.at : a.at+int(n)])
	a.at += int(n)
	return s, nil
}

func openCheckpoint(text, origin string, logKey note.Verifier, witnesses []note.Verifier) (*log.Checkpoint, error) {
	cp, _, n, err := log.ParseCheckpoint([]byte(text), origin, logKey, witnesses...)
	if err != nil {
		return nil, err
	}
	for _, w := range witnesses {
		found := false
		for _, s := range n.Sigs {
			if s.Name == w.Name() && s.Hash == w.KeyHash() {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("not co-signed by witness %s", w.Name())
		}
	}
	return cp, nil
}

func originOf(text string) string {
	first, _, _ := strings.Cut(text, "\n")
	return first
}

func run() (string, error) {
	var logKey string
	var witnessKeys keys
	flag.StringVar(&logKey, "key", "", "the log's verifier key")
	flag.Var(&witnessKeys, "witness", "a witness's verifier key whose co-signature is required (repeatable)")
	flag.Parse()
	if flag.NArg() != 1 || logKey == "" {
		return "", errors.New("usage: goverify -key LOGVKEY [-witness WVKEY]... PROOF.json")
	}
	logVerifier, err := note.NewVerifier(logKey)
	if err != nil {
		return "", fmt.Errorf("log key: %v", err)
	}
	var witnesses []note.Verifier
	for _, k := range witnessKeys {
		v, err := note.NewVerifier(k)
		if err != nil {
			return "", fmt.Errorf("witness key: %v", err)
		}
		witnesses = append(witnesses, v)
	}
	raw, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var doc document
	if err := dec.Decode(&doc); err != nil {
		return "", fmt.Errorf("malformed proof: %v", err)
	}
	if doc.Format != "ctrlaudit-proof" || doc.Version != 1 {
		return "", fmt.Errorf("not a version 1 ctrlaudit proof")
	}
	hasher := rfc6962.DefaultHasher
	switch doc.Kind {
	case "inclusion":
		if doc.Event == nil || doc.Index == nil {
			return "", errors.New("malformed proof: no event or index")
		}
		e := doc.Event
		sum := sha256.Sum256(append([]byte(e.PrevHash), e.Body...))
		if hex.EncodeToString(sum[:]) != e.Hash {
			return "", errors.New("the event's prev_hash and body do not hash to its hash")
		}
		body := &avroPrefix{data: e.Body}
		eventID, err := body.str()
		if err != nil {
			return "", err
		}
		clusterID, err := body.str()
		if err != nil {
			return "", err
		}
		seq, err := body.long()
		if err != nil {
			return "", err
		}
		if seq < 0 || uint64(seq) != *doc.Index {
			return "", fmt.Errorf("the event says seq %d, the proof places it at %d", seq, *doc.Index)
		}
		cp, err := openCheckpoint(doc.Checkpoint, "ctrlaudit/"+clusterID, logVerifier, witnesses)
		if err != nil {
			return "", fmt.Errorf("checkpoint: %v", err)
		}
		if err := proof.VerifyInclusion(hasher, *doc.Index, cp.Size, hasher.HashLeaf(sum[:]), doc.AuditPath, cp.Hash); err != nil {
			return "", fmt.Errorf("inclusion: %v", err)
		}
		return fmt.Sprintf("OK inclusion cluster=%s seq=%d event=%s size=%d", clusterID, seq, eventID, cp.Size), nil
	case "consistency":
		origin := originOf(doc.NewCheckpoint)
		if !strings.HasPrefix(origin, "ctrlaudit/") {
			return "", fmt.Errorf("origin %q is not a ctrlaudit cluster's log", origin)
		}
		oldCP, err := openCheckpoint(doc.OldCheckpoint, origin, logVerifier, witnesses)
		if err != nil {
			return "", fmt.Errorf("old checkpoint: %v", err)
		}
		newCP, err := openCheckpoint(doc.NewCheckpoint, origin, logVerifier, witnesses)
		if err != nil {
			return "", fmt.Errorf("new checkpoint: %v", err)
		}
		if err := proof.VerifyConsistency(hasher, oldCP.Size, newCP.Size, doc.ConsistencyPath, oldCP.Hash, newCP.Hash); err != nil {
			return "", fmt.Errorf("consistency: %v", err)
		}
		return fmt.Sprintf("OK consistency origin=%s size1=%d size2=%d", origin, oldCP.Size, newCP.Size), nil
	}
	return "", fmt.Errorf("unknown kind %q", doc.Kind)
}

func main() {
	line, err := run()
	if err != nil {
		fmt.Println("FAIL " + err.Error())
		os.Exit(1)
	}
	fmt.Println(line)
}
