//go:build tools

// Package lint pins golangci-lint, which `make vet` runs, in a module of its
// own so that its dependencies stay out of berth's and out of the CRI tools'.
package lint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
