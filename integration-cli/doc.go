// Package integrationcli holds the end-to-end tests: each starts a real
// dockerd on a temporary socket and data root and drives it with our CLI,
// the stock docker CLI and the Go client. Build tag: integration.
package integrationcli
