package testcert_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/testcert"
)

func TestIssued(t *testing.T) {
	ca := testcert.CA(t, "test CA")
	srv := testcert.Server(t, &ca, []string{"api.example"}, "127.0.0.1")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM()) {
		t.Fatal("the CA's PEM does not parse")
	}
	for _, name := range []string{"api.example", "127.0.0.1"} {
		if _, err := srv.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("the server certificate does not verify for %s: %v", name, err)
		}
	}
	if _, err := tls.X509KeyPair(srv.CertPEM(), srv.KeyPEM()); err != nil {
		t.Errorf("the PEM pair does not load: %v", err)
	}
}
