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

// ReadRaw reads one frame's body.
func ReadRaw(r io.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > MaxSize {
		return nil, fmt.Errorf("frame of %d bytes is larger than %d", n, MaxSize)
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
