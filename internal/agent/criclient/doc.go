// Package criclient is the node agent's side of CRI: Runtime and Images
// are the parts of the RuntimeService and ImageService the agent uses
// (nothing else, so any CRI runtime will do), Stats what its eviction
// manager measures with, and CRIClient implements all three over one gRPC
// connection to a unix socket (Dial). PullWatcher is optional: an Images
// whose runtime reports pull progress implements it too. Package
// criclienttest has an in-memory runtime for tests.
package criclient
