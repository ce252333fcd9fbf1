package serve

import (
	"os"

	"github.com/vitalsproject/vitals/health/checktype"
	"testing"
)

// TestDocsTableMatchesRegistry keeps the table of check types in docs/serve.md equal to the
// registry's declarations. VITALS_UPDATE_DOCS=1 rewrites it.
func TestDocsTableMatchesRegistry(t *testing.T) {
	write := os.Getenv("VITALS_UPDATE_DOCS") == "1"
	changed, err := checktype.SyncDoc("../docs/serve.md", Registry().Markdown(false), write)
	if err != nil {
		t.Fatal(err)
	}
	if changed && !write {
		t.Error("docs/serve.md: the table of check types differs from the registry; run VITALS_UPDATE_DOCS=1 go test -run TestDocsTableMatchesRegistry ./serve/")
	}
}
