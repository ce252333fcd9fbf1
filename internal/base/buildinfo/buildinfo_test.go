package buildinfo

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vitalsproject/vitals/internal/base/version"
)

func TestCollector(t *testing.T) {
	for _, tc := range []struct {
		in   version.Info
		want string
	}{
		{version.Info{Version: "v1.2.3", Commit: "0123abc", GoVersion: "go1.26.8"}, `vitals_build_info{commit="0123abc",goversion="go1.26.8",version="v1.2.3"} 1`},
		{version.Info{Version: "dev", Commit: "0123abc", Modified: true, GoVersion: "go1.26.8"}, `vitals_build_info{commit="0123abc-modified",goversion="go1.26.8",version="dev"} 1`},
		{version.Info{Version: "dev", GoVersion: "go1.26.8"}, `vitals_build_info{commit="",goversion="go1.26.8",version="dev"} 1`},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(Collector(tc.in))
		if err := testutil.GatherAndCompare(reg, strings.NewReader("# HELP vitals_build_info 1, labelled with the version, the commit (with -modified when the tree had changes) and the Go version of the running binary.\n# TYPE vitals_build_info gauge\n"+tc.want+"\n"), Name); err != nil {
			t.Errorf("%+v: %v", tc.in, err)
		}
	}
	if err := Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
}
