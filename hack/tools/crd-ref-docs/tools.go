//go:build tools

// Package tools pins crd-ref-docs for hack/generate.sh api.
package tools

import _ "github.com/elastic/crd-ref-docs"
