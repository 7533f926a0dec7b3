# Build and test the engine. `make` builds the three binaries: bin/dockerd,
# bin/docker-shim (the container shim and libcontainer's init) and bin/docker.
GO       ?= go
TAGS     := seccomp
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X github.com/sdengine/engine/daemon.GitCommit=$(COMMIT)

.PHONY: all binaries test unit integration critest lint demo compat k8s clean

# BIN is where the binaries go (hack/bench builds into a private one).
BIN      ?= bin

all: binaries

binaries: $(BIN)/dockerd $(BIN)/docker $(BIN)/docker-shim
.PHONY: $(BIN)/dockerd $(BIN)/docker $(BIN)/docker-shim

$(BIN)/dockerd:
	CGO_ENABLED=1 $(GO) build -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $@ ./cmd/dockerd

# The shim is also libcontainer's init, started afresh for every container
# and every exec: linked statically (libseccomp and libc included, Go's own
# resolver and user lookup), it skips the dynamic loader and its
# relocations each time (about 2 ms and 70 page faults per start here).
$(BIN)/docker-shim:
	CGO_ENABLED=1 $(GO) build -tags '$(TAGS) netgo osusergo' -ldflags "$(LDFLAGS) -linkmode external -extldflags '-static'" -o $@ ./cmd/docker-shim

# The CLI needs no C: without cgo it is a static binary, which starts
# faster (no dynamic loader) on every command.
$(BIN)/docker:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/docker

# The whole test suite, as CI runs it (hack/test installs what it needs).
test:
	hack/test

unit:
	$(GO) test -tags '$(TAGS)' ./...

integration: binaries
	$(GO) test -tags '$(TAGS) integration' -count=1 -timeout 30m ./integration-cli/

# cri-tools' critest (the whole suite) against dockerd's CRI socket, in a
# network namespace of its own, offline (hack/critest/run); fails on a
# failing spec not in hack/critest/expected-failures.txt.
critest: binaries
	hack/critest/run

# gofmt, vet, staticcheck (the integration tests build only with their tag:
# checked apart); and the image store stands on its own (nothing under daemon/);
# no import runs the wrong way between the layers (hack/lint/imports.txt).
# lint also keeps net/http out of the shim, which starts afresh for every
# container and exec: net/http's initialisation alone cost 3 ms a start.
lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	$(GO) vet -tags '$(TAGS)' ./...
	$(GO) vet -tags '$(TAGS) integration' ./integration-cli/
	$(GO) vet -tags k8s ./hack/k8s/
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags '$(TAGS)' ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags '$(TAGS) integration' ./integration-cli/
	! $(GO) list -tags '$(TAGS)' -test -deps ./image/... | grep 'sdengine/engine/daemon/'
	TAGS='$(TAGS)' hack/lint/imports
	! $(GO) list -tags '$(TAGS) netgo osusergo' -deps ./cmd/docker-shim | grep -x 'net/http'

# moby v28.5.2's own API integration tests against a private dockerd
# (hack/compat/run; not part of `make test`). Writes hack/compat/results/.
compat: binaries
	hack/compat/run

# A real kubelet (v1.37, built from source and cached) runs a static pod
# through dockerd's CRI socket, in a private network namespace
# (hack/k8s/run, hack/k8s/README.md; not part of `make test`).
k8s: binaries
	hack/k8s/run

# Build, start dockerd on its default paths, make the busybox image, run it.
demo:
	hack/demo

clean:
	rm -rf bin

# --- packaging (contrib/rpm, hack/gen-docs) ---
BUILDDIR    ?= build
RPM_NAME    := docker
RPM_VERSION := $(shell sed -n 's/^Version: *//p' contrib/rpm/docker.spec)
RPMDIR      := $(abspath $(BUILDDIR))/rpm
RPM_TARBALL := $(RPMDIR)/SOURCES/$(RPM_NAME)-$(RPM_VERSION).tar.gz
# rpmbuild runs outside this shell's PATH assumptions: hand it our go.
RPMBUILD    := rpmbuild --define '_topdir $(RPMDIR)' --define 'commit $(COMMIT)' \
	--define 'gobin $(shell command -v $(GO))'

.PHONY: docs docs-check vendor rpm-tarball srpm rpm rpmlint

# Man pages (man/man1, man/man8) and completion (contrib/completion) are
# build output; docs/reference is committed, regenerated here.
docs:
	rm -rf man/man1 man/man8 docs/reference
	$(GO) run -tags '$(TAGS)' ./hack/gen-docs -man man -md docs/reference -completion contrib/completion

# Fails when docs/reference is stale (a flag or command changed).
docs-check:
	rm -rf $(BUILDDIR)/docs-check
	$(GO) run -tags '$(TAGS)' ./hack/gen-docs -md $(BUILDDIR)/docs-check
	diff -r docs/reference $(BUILDDIR)/docs-check

# The modules for an offline build, outside the tree: a ./vendor would
# switch every local build to -mod=vendor.
vendor:
	rm -rf $(BUILDDIR)/vendor
	$(GO) mod vendor -o $(BUILDDIR)/vendor

rpm-tarball: vendor
	contrib/rpm/source-tarball.sh $(BUILDDIR)/vendor $(RPM_TARBALL) $(RPM_NAME)-$(RPM_VERSION)

# --nodeps: on a non-RPM host (Debian) the BuildRequires are not in the
# rpm database; hack/deps installs their Debian equivalents.
srpm: rpm-tarball
	$(RPMBUILD) --nodeps -bs contrib/rpm/docker.spec
	@ls $(RPMDIR)/SRPMS/*.src.rpm

rpm: rpm-tarball
	$(RPMBUILD) --nodeps -ba contrib/rpm/docker.spec
	@ls $(RPMDIR)/RPMS/*/*.rpm $(RPMDIR)/SRPMS/*.src.rpm

# No errors expected; the warnings left are documented in contrib/rpm/README.md.
rpmlint:
	rpmlint -c contrib/rpm/rpmlint.toml contrib/rpm/docker.spec $(RPMDIR)/RPMS/*/*.rpm $(RPMDIR)/SRPMS/*.src.rpm
