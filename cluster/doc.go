// Package cluster brings Redis topologies up and down and stands the
// network between the clients and the nodes.
//
// A topology (single, replicated, sentinel, redlock, cluster; topology.go
// and a file each) starts its servers through a Local (servers.go) on a
// backend: local redis-server processes (local.go), Docker containers
// (docker.go) or a user's own servers (external.go). Whatever the backend,
// none of what a run starts outlives it: Close stops it, each child is
// bound to the harness process so that a harness killed with -9 takes its
// servers with it, and `torture clean` (clean.go) removes what a killed run
// left. The clients reach every node through Toxiproxy (network.go), where
// the faults act.
package cluster
