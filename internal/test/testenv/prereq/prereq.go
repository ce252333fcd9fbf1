package prereq

import (
	"fmt"
	"os"
	"testing"
)

// EnvRequired, set to 1, turns every missing prerequisite into a failure.
const EnvRequired = "VITALS_TESTENV_REQUIRED"

// Required reports whether every prerequisite is required (VITALS_TESTENV_REQUIRED=1).
func Required() bool { return os.Getenv(EnvRequired) == "1" }

// Missing skips t, saying what is missing, or fails it when prerequisites are required.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (%s=1: every prerequisite is required)", msg, EnvRequired)
	}
	t.Skip(msg)
}

// Short skips t in -short runs, which are for tests that need nothing but the package itself; what says
// what the test does that -short leaves out.
func Short(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: skipped in -short mode", what)
	}
}
