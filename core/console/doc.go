// Package console is toolhost's web console: the portal's screens (tool
// groups and their statuses, the shared file storage, sessions and their
// logs) and a playground that shows calls as a user sees them, served by
// `toolhost serve` at / with every asset embedded.
package console

import "embed"

// Static holds the console's static assets (scripts, styles, the vendored
// libraries), served under /static/.
//
//go:embed static
var Static embed.FS
