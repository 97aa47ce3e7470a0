//go:build tools

// Package tools pins the etcd server the local rehearsal builds (see
// tools/rehearsal/services/etcd.sh and rendezvous.sh). etcd 3.5 is kept on
// purpose: 3.6 removed the v2 API that TorchElastic's etcd rendezvous needs.
package tools

import _ "go.etcd.io/etcd/server/v3"
