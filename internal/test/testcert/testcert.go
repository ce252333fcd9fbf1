package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// Issued is a key and the certificate issued for it.
type Issued struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	DER  []byte
}

// Issue makes a P-256 key and a certificate of tmpl for it, valid from an hour ago for two hours, signed by
// parent (self-signed when parent is nil). A template without a serial number gets 1.
func Issue(t testing.TB, tmpl *x509.Certificate, parent *Issued) Issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcert: generate a key: %v", err)
	}
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = big.NewInt(1)
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(time.Hour)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatalf("testcert: issue %q: %v", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testcert: parse %q: %v", tmpl.Subject.CommonName, err)
	}
	return Issued{Cert: cert, Key: key, DER: der}
}

// CA is a self-signed certificate authority named name (it may sign, and itself serve: a self-signed
// server certificate trusted as its own authority).
func CA(t testing.TB, name string) Issued {
	t.Helper()
	return Issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil)
}

// Server is a server certificate for the DNS names and IP addresses given, signed by parent (self-signed
// when nil).
func Server(t testing.TB, parent *Issued, dnsNames []string, ips ...string) Issued {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), DNSNames: dnsNames,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if len(dnsNames) > 0 {
		tmpl.Subject.CommonName = dnsNames[0]
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, parseIP(t, ip))
	}
	return Issue(t, tmpl, parent)
}

// CertPEM is the certificate in PEM.
func (i Issued) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.DER})
}

// KeyPEM is the key in PEM (SEC 1, "EC PRIVATE KEY").
func (i Issued) KeyPEM() []byte {
	der, err := x509.MarshalECPrivateKey(i.Key)
	if err != nil {
		panic("testcert: marshal a P-256 key: " + err.Error()) // cannot fail for a key of this package
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// TLS is the pair as a tls.Certificate, for a server's tls.Config.
func (i Issued) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{i.DER}, PrivateKey: i.Key, Leaf: i.Cert}
}

func parseIP(t testing.TB, s string) net.IP {
	t.Helper()
	ip := net.ParseIP(s)
	if ip == nil {
		t.Fatalf("testcert: %q is not an IP address", s)
	}
	return ip
}
