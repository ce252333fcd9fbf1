package checks

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/rawhttp"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// A 200 whose body is cut off or reset is unhealthy, as curl -f sees it (exit 18 and 56); a
// header beyond the bounds is unhealthy, in bytes or in fields; the same servers' whole answers
// are healthy.
func TestHTTPBodyToTheEndAndBoundedHeader(t *testing.T) {
	big := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name     string
		reset    bool
		answer   string
		contains string
		wantErr  string
		curlExit int
	}{
		{"whole body", false, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n", "", "", 0},
		{"whole chunked body", false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n0\r\n\r\n", "", "", 0},
		{"cut off before its length", false, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok\n", "", "body cut off: connection closed before the end of the body", 18},
		{"chunked without its last chunk", false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n", "", "body cut off: connection closed before the end of the body", 18},
		{"cut off with contains found", false, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok\n", "ok", "body cut off", 18},
		{"reset mid-way", true, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("ok\n", 1000), "", "body cut off: connection reset by peer", 56},
		{"header beyond 16 KiB", false, "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Big: "+big+"\r\n", 200) + "Content-Length: 3\r\n\r\nok\n", "", "headers exceeded 16384 bytes", -1},
		{"more than 100 header fields", false, "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: b\r\n", 101) + "Content-Length: 3\r\n\r\nok\n", "", "102 header fields (at most 100)", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawhttp.Server(t, tc.reset, func(w *bufio.Writer) { _, _ = w.WriteString(tc.answer) }) + "/health"
			f, err := HTTP(HTTPOptions{URL: url, Contains: tc.contains})
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, f)
			wantResult(t, err, tc.wantErr)
			if tc.curlExit < 0 {
				return // curl takes headers up to 100 KiB: a bound of our own
			}
			curl, lookErr := exec.LookPath("curl")
			if lookErr != nil {
				prereq.Missing(t, "curl, to compare: %v", lookErr)
			}
			code := 0
			var ee *exec.ExitError
			if err := exec.Command(curl, "-g", "-k", "-q", "-s", "-S", "--fail", "-o", "/dev/null", "--max-time", "10", url).Run(); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.curlExit {
				t.Errorf("curl -f exits %d, want %d (the test's premise)", code, tc.curlExit)
			}
		})
	}
}
