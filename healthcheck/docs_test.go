package healthcheck

import (
	"os"

	"github.com/vitalsproject/vitals/health/checktype"
	"testing"
)

// TestDocsTableMatchesRegistry keeps the table of checks in docs/healthcheck.md equal to the
// registry's declarations. VITALS_UPDATE_DOCS=1 rewrites it.
func TestDocsTableMatchesRegistry(t *testing.T) {
	write := os.Getenv("VITALS_UPDATE_DOCS") == "1"
	changed, err := checktype.SyncDoc("../docs/healthcheck.md", Registry().Markdown(true), write)
	if err != nil {
		t.Fatal(err)
	}
	if changed && !write {
		t.Error("docs/healthcheck.md: the table of checks differs from the registry; run VITALS_UPDATE_DOCS=1 go test -run TestDocsTableMatchesRegistry ./healthcheck/")
	}
}
