// Package gpyhost gives the plugin process its gpython runtime
// (pyhost.GPython): the plugin binaries that run gpython groups link it,
// toolhost-cpython does not.
package gpyhost

import (
	"toolhost/plugins"
	"toolhost/pyhost"
	"toolhost/pyhost/gpython"
)

// New makes a gpython group's runtime.
func New(req *plugins.LoadRequest, cb plugins.Callbacks) pyhost.Runtime {
	g := gpython.New(req)
	g.Callbacks = cb
	return g
}
