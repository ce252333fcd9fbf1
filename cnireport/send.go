package cnireport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// DefaultTimeout bounds Send when ctx has no deadline.
const DefaultTimeout = 30 * time.Second

// Send writes reports to the agent's socket at path, one JSON line each, and returns the agent's answer
// to each. The error joins the reasons of the reports the agent rejected, or says why they could not be
// delivered.
func Send(ctx context.Context, path string, reports ...Report) ([]Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to agent socket: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(DefaultTimeout))
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	w := bufio.NewWriter(conn)
	enc := json.NewEncoder(w)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			return nil, fmt.Errorf("encode report: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("send reports to agent socket: %w", err)
	}
	if uc, ok := conn.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	// An answer is one short line: whatever listens on the socket gets MaxLine bytes per report to say it.
	answers := &io.LimitedReader{R: bufio.NewReader(conn), N: int64(len(reports)) * MaxLine}
	dec := json.NewDecoder(answers)
	out := make([]Response, 0, len(reports))
	for range reports {
		var resp Response
		if err := dec.Decode(&resp); err != nil {
			switch {
			case ctx.Err() != nil:
				err = ctx.Err()
			case answers.N <= 0:
				err = fmt.Errorf("answers longer than %d bytes for %d reports", int64(len(reports))*MaxLine, len(reports))
			}
			return out, fmt.Errorf("read agent answer %d of %d: %w", len(out)+1, len(reports), err)
		}
		out = append(out, resp)
	}
	var errs []error
	for i, resp := range out {
		if !resp.OK {
			errs = append(errs, fmt.Errorf("report %d: %s", i+1, resp.Error))
		}
	}
	return out, errors.Join(errs...)
}
