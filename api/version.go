// Package api holds what both ends of the Engine API agree on beyond the
// wire types (github.com/docker/docker/api/types): the versions served.
// It imports nothing of the engine, so that the daemon, the server and
// the CLI can all read it.
package api

// The API versions served. DefaultVersion is the one github.com/docker/docker
// v28.5's api/types implement; MinVersion is the oldest the stock CLI may
// negotiate down to.
const (
	DefaultVersion = "1.51"
	MinVersion     = "1.24"
)

// EngineVersion is what /version reports as the engine's own version.
var EngineVersion = "28.5.2-sd"
