package checktype

import (
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// httpType declares the http check type.
func httpType() Type {
	return Type{
		Name: "http", Args: []string{"url"}, Timeout: 10 * time.Second, SelfTimed: true,
		Doc: "the response status is in range (redirects are not followed) and the body contains `contains`",
		Options: []Option{
			{Name: "url", Required: true, Doc: "http:// or https:// URL; without a scheme, http://"},
			{Name: "method", Default: "GET", Doc: "GET or HEAD"},
			{Name: "status", Default: "200-399", Arg: "RANGE", Validate: validStatus, Doc: "accepted statuses: `200`, `200-299` or `2xx`"},
			{Name: "contains", Arg: "TEXT", Doc: "text the body must contain (in its first MiB)"},
			{Name: "header", Kind: Header, Arg: "'NAME: VALUE'", Doc: "request header, repeatable (in YAML a list or a mapping)",
				Aliases: []Alias{{Name: "H"}, {Name: "headers", Deprecated: true}}},
			insecure, caFile,
			{Name: "server_name", Arg: "NAME", Doc: "name verified in the server's certificate"},
			{Name: "cert_file", Arg: "FILE", Doc: "client certificate (PEM), with key_file"},
			{Name: "key_file", Arg: "FILE", Doc: "client key (PEM)"},
			{Name: "proxy", Kind: Bool, Doc: "go through HTTP_PROXY/HTTPS_PROXY, honouring NO_PROXY (off: never proxied)"},
		},
		New: newHTTP,
	}
}

func newHTTP(v *Values) (checks.Func, error) {
	o := checks.HTTPOptions{URL: withScheme(v.String("url")), Method: v.String("method"), Contains: v.String("contains"),
		Header: v.Header("header"), Insecure: v.Bool("insecure"), CAFile: v.String("ca_file"), ServerName: v.String("server_name"),
		CertFile: v.String("cert_file"), KeyFile: v.String("key_file"), Proxy: v.Bool("proxy"), Timeout: v.Timeout()}
	o.StatusMin, o.StatusMax, _ = checks.ParseStatusRange(v.String("status")) // validated
	return checks.HTTP(o)
}

func validStatus(s string) error {
	_, _, err := checks.ParseStatusRange(s)
	return err
}

func withScheme(u string) string {
	if !strings.Contains(u, "://") {
		return "http://" + u
	}
	return u
}
