# Vitals. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X github.com/vitalsproject/vitals/internal/base/version.Version=$(VERSION) -X github.com/vitalsproject/vitals/internal/base/version.Commit=$(COMMIT)

.PHONY: help build release ca-bundle vitals vitals-agent vitals-cni vitals-canary healthcheck cloudsim test test-short lint demo testenv-up testenv-down testenv-status clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

build: vitals vitals-agent vitals-cni vitals-canary healthcheck ## build the binaries into bin/

vitals: ## build bin/vitals
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/vitals ./cmd/vitals

vitals-agent: ## build bin/vitals-agent (the node agent alone: no operator, no OpenStack client)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/vitals-agent ./cmd/vitals-agent

vitals-cni: ## build bin/vitals-cni (the CNI reporter: a delegating CNI plugin, standard library only)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/vitals-cni ./cmd/vitals-cni

vitals-canary: ## build bin/vitals-canary (the agent's pod network canary: standard library and the probes only)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/vitals-canary ./cmd/vitals-canary

healthcheck: ## build bin/healthcheck (static, small)
	CGO_ENABLED=0 $(GO) build -trimpath -tags nethttpomithttp2 -ldflags '$(LDFLAGS)' -o $(BIN)/healthcheck ./cmd/healthcheck

release: ## the chart package and the operator's and agent's images (linux/amd64, linux/arm64) as OCI archives in _out/release (hack/release.sh)
	hack/release.sh

CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt

ca-bundle: ## copy the build machine's CA bundle (Debian: ca-certificates) into bin/, for deploy/Dockerfile
	install -D -m 0644 $(CA_BUNDLE) $(BIN)/ca-certificates.crt

cloudsim: ## build bin/vitals-cloudsim, the OpenStack simulator (a test and demo tool, not in the image)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/vitals-cloudsim ./cmd/vitals-cloudsim

test: ## set up the real services (kube-apiserver+etcd, OpenStack, dockerd) and run every test
	hack/test.sh

test-short: ## unit tests only; tests that need a real service skip
	$(GO) test -short ./...

lint: ## gofmt, go vet, staticcheck
	hack/lint.sh

demo: ## run Vitals' main job against local services
	hack/demo.sh

testenv-up: ## start the test services (VITALS_OPENSTACK_TIER=fast|full); prints the env file to source
	hack/testenv.sh up

testenv-down: ## stop the test services
	hack/testenv.sh down

testenv-status: ## show which test services run
	hack/testenv.sh status

clean:
	rm -rf $(BIN)
