// Package opts parses the values of container flags (environment files,
// labels, sizes, CPU counts, filters, the --init extension) into Engine API
// types. It is shared by the docker CLI and the daemon, so it depends only
// on API types and never on daemon or CLI code.
package opts
