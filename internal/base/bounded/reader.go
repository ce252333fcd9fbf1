package bounded

import (
	"fmt"
	"io"
)

// ReadCloser returns rc limited to limit bytes: a read past them fails with an error wrapping ErrTooLarge
// that names what (for example "response of GET https://keystone/v3/auth/tokens"). Close closes rc.
func ReadCloser(rc io.ReadCloser, limit int64, what string) io.ReadCloser {
	return &limitedReadCloser{rc: rc, left: limit, limit: limit, what: what}
}

type limitedReadCloser struct {
	rc    io.ReadCloser
	left  int64 // bytes that may still be read
	limit int64
	what  string
}

func (l *limitedReadCloser) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		if n, err := l.rc.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("%s: %w: more than %s", l.what, ErrTooLarge, Size(l.limit))
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedReadCloser) Close() error { return l.rc.Close() }
