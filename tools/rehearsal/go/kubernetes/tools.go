//go:build tools

// Package tools pins the Kubernetes commands the local rehearsal builds from
// k8s.io/kubernetes (see tools/rehearsal/services/kube.sh); the build tag keeps
// it out of every ordinary build.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
