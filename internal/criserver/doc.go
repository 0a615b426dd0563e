// Package criserver is berth's CRI v1 gRPC edge. It validates requests,
// converts CRI messages to calls on the pod and image services, converts
// records back to CRI statuses, and maps berth's error classes
// (internal/errdefs) to gRPC codes, once, in one interceptor. It holds no
// business logic and never touches runc, CNI or the record store directly.
//
// Until Ready is called (after recovery) every RPC answers Unavailable.
package criserver
