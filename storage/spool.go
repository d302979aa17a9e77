package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// A result is not lost because the store was briefly away (issue 27). A
// keyed call's answer (or the release of its key) that cannot be written
// because the database is unreachable is kept in the node's data folder,
// written and synced before the caller gets the answer, and written to the
// database as soon as it answers again: every SpoolRetry, and before the
// node claims anything at its next start (Incarnate), so that a retry of
// the key, on any node, finds the claim running and waits for the answer
// instead of running the call again. The claim stays its incarnation's
// meanwhile: a node restarted in between delivers its spool before it
// declares the incarnations before it dead.

// SpoolRetry is how often kept answers are offered to the database again.
const SpoolRetry = 500 * time.Millisecond

// spooled is one kept write of the ledger.
type spooled struct {
	Op       string `json:"op"` // "complete" or "release"
	Tenant   int64  `json:"tenant"`
	Key      string `json:"key"`
	Claim    string `json:"claim"`
	Response []byte `json:"response,omitempty"`
}

// spool is the node's kept ledger writes.
type spool struct {
	mu      sync.Mutex
	running bool
	// mem holds the writes that could not be written to the folder
	// either (its disk full too, its reserve given): kept in memory, so
	// that this node's retries of their keys still find the answer once
	// the database takes it, as long as the node lives.
	mem []spooled
}

// keepSomewhere keeps w in the folder, else, on a full disk, in the folder
// with the disk's reserve given to it, else in memory. It fails only when
// the folder fails for another reason.
func (s *DB) keepSomewhere(w spooled) error {
	err := s.keep(w)
	if err != nil && Full(err) && s.FreeReserve() {
		err = s.keep(w)
	}
	if err != nil && Full(err) {
		s.spool.mu.Lock()
		s.spool.mem = append(s.spool.mem, w)
		s.spool.mu.Unlock()
		s.deliverLater()
		return nil
	}
	return err
}

func (s *DB) spoolDir() string { return filepath.Join(s.dir, "pending-answers") }

// keep writes w to the spool, synced, and starts delivering it. Its error
// is the caller's to report (the answer is then not kept).
func (s *DB) keep(w spooled) error {
	if err := os.MkdirAll(s.spoolDir(), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(strconv.FormatInt(w.Tenant, 10) + "\x00" + w.Key + "\x00" + w.Claim))
	name := filepath.Join(s.spoolDir(), hex.EncodeToString(sum[:16])+".json")
	tmp, err := os.CreateTemp(s.spoolDir(), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if d, err := os.Open(s.spoolDir()); err == nil {
		d.Sync()
		d.Close()
	}
	s.deliverLater()
	return nil
}

// deliverLater starts the delivery loop unless it runs.
func (s *DB) deliverLater() {
	s.spool.mu.Lock()
	defer s.spool.mu.Unlock()
	if s.spool.running {
		return
	}
	s.spool.running = true
	go func() {
		for {
			time.Sleep(SpoolRetry)
			left, _ := s.deliverSpool(context.Background())
			s.spool.mu.Lock()
			if left == 0 {
				s.spool.running = false
				s.spool.mu.Unlock()
				return
			}
			s.spool.mu.Unlock()
		}
	}()
}

// deliverSpool writes the kept ledger writes to the database and removes
// those written (or no longer the claim's to write), and answers how many
// are left, with the last error.
func (s *DB) deliverSpool(ctx context.Context) (left int, err error) {
	s.spool.mu.Lock()
	mem := s.spool.mem
	s.spool.mem = nil
	s.spool.mu.Unlock()
	var kept []spooled
	for _, w := range mem {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		if w.Op == "complete" {
			err = s.completeKey(c, w.Tenant, w.Key, w.Claim, w.Response)
		} else {
			err = s.releaseKey(c, w.Tenant, w.Key, w.Claim)
		}
		cancel()
		if err != nil && !errors.Is(err, ErrClaimLost) {
			kept = append(kept, w)
		}
	}
	if len(kept) > 0 {
		s.spool.mu.Lock()
		s.spool.mem = append(kept, s.spool.mem...)
		s.spool.mu.Unlock()
		left += len(kept)
	}
	names, _ := filepath.Glob(filepath.Join(s.spoolDir(), "*.json"))
	for _, name := range names {
		b, rerr := os.ReadFile(name)
		var w spooled
		if rerr == nil {
			rerr = json.Unmarshal(b, &w)
		}
		if rerr != nil {
			os.Remove(name) // torn by a crash before its rename: never acknowledged
			continue
		}
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		switch w.Op {
		case "complete":
			err = s.completeKey(c, w.Tenant, w.Key, w.Claim, w.Response)
		case "release":
			err = s.releaseKey(c, w.Tenant, w.Key, w.Claim)
		default:
			os.Remove(name) // not one of ours
			cancel()
			continue
		}
		cancel()
		if err == nil || errors.Is(err, ErrClaimLost) {
			os.Remove(name)
			continue
		}
		// Kept, whatever the error: an answer is dropped only once the
		// database has it, or its claim is another's.
		left++
	}
	return left, err
}

// Spooled is how many ledger writes wait in the node's folder for the
// database (for /metrics).
func (s *DB) Spooled() int {
	names, _ := filepath.Glob(filepath.Join(s.spoolDir(), "*.json"))
	s.spool.mu.Lock()
	defer s.spool.mu.Unlock()
	return len(names) + len(s.spool.mem)
}
