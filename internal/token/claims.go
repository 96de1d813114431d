package token

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// encodeClaims returns the binary payload described in the package comment.
func encodeClaims(c Claims) []byte {
	b := make([]byte, 0, len(c.RunID)+len(c.StepKey)+4*binary.MaxVarintLen64)
	b = binary.AppendUvarint(b, uint64(len(c.RunID)))
	b = append(b, c.RunID...)
	b = binary.AppendUvarint(b, uint64(len(c.StepKey)))
	b = append(b, c.StepKey...)
	b = binary.AppendVarint(b, c.Seq)
	b = binary.AppendVarint(b, c.Expires.Unix())
	return b
}

// decodeClaims parses a payload, accepting only the canonical encoding.
func decodeClaims(b []byte) (Claims, error) {
	r := reader{b: b}
	var c Claims
	c.RunID = r.str()
	c.StepKey = r.str()
	c.Seq = r.varint()
	c.Expires = time.Unix(r.varint(), 0).UTC()
	if r.err != nil {
		return Claims{}, r.err
	}
	if len(r.b) != 0 {
		return Claims{}, fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if !bytes.Equal(encodeClaims(c), b) {
		return Claims{}, errors.New("non-canonical encoding")
	}
	return c, nil
}

// reader consumes a payload; the first error sticks and later reads are no-ops.
type reader struct {
	b   []byte
	err error
}

func (r *reader) str() string {
	if r.err != nil {
		return ""
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = errors.New("bad length")
		return ""
	}
	r.b = r.b[k:]
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("length %d exceeds the %d remaining bytes", n, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.b)
	if k <= 0 {
		r.err = errors.New("bad integer")
		return 0
	}
	r.b = r.b[k:]
	return v
}
