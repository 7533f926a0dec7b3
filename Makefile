# Build and test the engine. `make` builds bin/dockerd and bin/docker.
GO       ?= go
TAGS     := seccomp
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X github.com/sdengine/engine/daemon.GitCommit=$(COMMIT)

.PHONY: all binaries bin/dockerd bin/docker bin/docker-shim test unit integration lint demo clean

all: binaries

binaries: bin/dockerd bin/docker bin/docker-shim

bin/dockerd:
	CGO_ENABLED=1 $(GO) build -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $@ ./cmd/dockerd

bin/docker-shim:
	CGO_ENABLED=1 $(GO) build -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $@ ./cmd/docker-shim

bin/docker:
	$(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/docker

# The whole test suite, as CI runs it (hack/test installs what it needs).
test:
	hack/test

unit:
	$(GO) test -tags '$(TAGS)' ./...

integration: binaries
	$(GO) test -tags '$(TAGS) integration' -count=1 -timeout 30m ./integration-cli/

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	$(GO) vet -tags '$(TAGS)' ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags '$(TAGS)' ./...

# Build, start dockerd on its default paths, make the busybox image, run it.
demo:
	hack/demo

clean:
	rm -rf bin
