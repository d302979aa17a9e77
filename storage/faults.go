package storage

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// The two faults of a store that are not the caller's doing, told apart
// so that the doors answer what happened (issue 27): a store that cannot
// be reached is 503 with Retry-After, a full disk is 507, and neither is a
// bare 500 nor, for a token, a 401 that makes a client throw away good
// credentials.

// Unavailable reports whether err says the store could not be reached or
// is going away: a refused or broken connection, a PostgreSQL server
// shutting down or starting, a connection the pool gave up on. A retry
// later may succeed; the request itself was not at fault.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// Checked first: a refused connection wraps the server's own
		// error (53300 too many clients, 57P03 starting up).
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57P01-57P03: admin shutdown,
		// crash shutdown, cannot connect now; class 53: insufficient
		// resources (too many connections, out of memory), but a full
		// disk (53100), which Full tells.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" ||
			strings.HasPrefix(pe.Code, "53") && pe.Code != "53100"
	}
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &oe), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	// pgx's closed connection and pool errors carry no type of their own.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "failed to connect") ||
		strings.Contains(msg, "the database system is shutting down") || strings.Contains(msg, "the database system is starting up")
}

// Full reports whether err says the disk under the store is full: SQLite's
// SQLITE_FULL, ENOSPC, or PostgreSQL's disk_full (53100).
func Full(err error) bool {
	if err == nil {
		return false
	}
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrFull {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "53100"
	}
	return errors.Is(err, syscall.ENOSPC)
}

// Ping checks that the store answers within d: what /readyz asks.
func (s *DB) Ping(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var one int
	return s.row(ctx, `SELECT 1`).Scan(&one)
}

// DiskFree is the space left to an unprivileged writer of the node's data
// folder, in bytes.
func (s *DB) DiskFree() (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.Dir(), &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// ReserveBytes is the space a SQLite node keeps in a file of its data
// folder (disk-reserve), to give back when the disk is full so that
// deleting, which frees space, can still be written (the journal of a
// DELETE needs room too).
const ReserveBytes = 8 << 20

func (s *DB) reservePath() string { return filepath.Join(s.dir, "disk-reserve") }

// keepReserve makes the reserve file when it is missing and the disk has
// room for it four times over (SQLite only: on PostgreSQL the database's
// disk is not the node's).
func (s *DB) keepReserve() {
	if s.dialect == postgresDialect {
		return
	}
	if _, err := os.Stat(s.reservePath()); err == nil {
		return
	}
	if free, err := s.DiskFree(); err != nil || free < 4*ReserveBytes {
		return
	}
	f, err := os.CreateTemp(s.dir, ".disk-reserve-*")
	if err != nil {
		return
	}
	_, err = f.Write(make([]byte, ReserveBytes)) // written, not sparse
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err == nil {
		err = os.Rename(f.Name(), s.reservePath())
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// FreeReserve gives the reserve's space back, for a write that frees
// space (a DELETE) on a full disk, and reports whether there was one. The
// reserve is made again once the disk has room for it.
func (s *DB) FreeReserve() bool {
	if os.Remove(s.reservePath()) != nil {
		return false
	}
	go func() {
		for i := 0; i < 720; i++ { // an hour
			time.Sleep(5 * time.Second)
			if _, err := os.Stat(s.reservePath()); err == nil {
				return
			}
			if free, err := s.DiskFree(); err == nil && free >= 8*ReserveBytes {
				s.keepReserve()
				return
			}
		}
	}()
	return true
}

// noteWrite remembers whether the last write failed for a full disk (the
// database's own, which the node's DiskFree does not see on PostgreSQL),
// until a write succeeds.
func (s *DB) noteWrite(err error) {
	switch {
	case err != nil && Full(err):
		s.writesFull.Store(true)
	case err == nil && s.writesFull.Load():
		s.writesFull.Store(false)
	}
}

// WritesFull reports whether the database's last write failed because its
// disk is full (/readyz).
func (s *DB) WritesFull() bool { return s.writesFull.Load() }
