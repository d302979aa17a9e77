// Package frame reads and writes the framed JSON that pyhost and its
// workers speak: a 4-byte big-endian length, then that many bytes of JSON.
package frame

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// MaxSize is the largest frame accepted, in bytes.
const MaxSize = 64 << 20

// Write encodes v as one frame.
func Write(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteRaw(w, body)
}

// WriteRaw writes body as one frame.
func WriteRaw(w io.Writer, body []byte) error {
	if len(body) > MaxSize {
		return fmt.Errorf("frame of %d bytes is larger than %d", len(body), MaxSize)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err := w.Write(buf)
	return err
}

// TooLargeError is a frame whose announced size is past the limit the
// reader was given. It is returned before any of the body is read or
// allocated; the stream is then out of step and must not be read further.
type TooLargeError struct {
	Size, Limit int64
}

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes is larger than %d", e.Size, e.Limit)
}

// ReadRaw reads one frame's body of at most MaxSize bytes.
func ReadRaw(r io.Reader) ([]byte, error) { return ReadRawLimit(r, MaxSize) }

// ReadRawLimit reads one frame's body of at most limit bytes (MaxSize when
// limit is not positive or larger): a frame announcing more is refused
// with a *TooLargeError before its body is allocated, so a hostile writer
// cannot make the reader hold more than limit bytes.
func ReadRawLimit(r io.Reader, limit int) ([]byte, error) {
	if limit <= 0 || limit > MaxSize {
		limit = MaxSize
	}
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if int64(n) > int64(limit) {
		return nil, &TooLargeError{Size: int64(n), Limit: int64(limit)}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// Read reads one frame into v.
func Read(r io.Reader, v any) error {
	body, err := ReadRaw(r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("malformed frame: %w", err)
	}
	return nil
}
