// Package testcert issues the keys and certificates tests need (a certificate authority, a server's
// certificate for a name, a self-signed pair in PEM): P-256 keys, valid from an hour ago for two hours.
// It is part of the test harness: only tests import it.
package testcert
