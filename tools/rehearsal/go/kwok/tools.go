//go:build tools

// Package tools only names the commands this wrapper module builds.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
