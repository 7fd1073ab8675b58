// Package standard links the built-in provider types into a binary: import
// it for its side effect (each provider registers itself in init).
//
//	import _ "github.com/benchflow/benchflow/providers/standard"
package standard

import (
	_ "github.com/benchflow/benchflow/providers/docker" // docker
	_ "github.com/benchflow/benchflow/providers/k8s"    // k8s
	_ "github.com/benchflow/benchflow/providers/local"  // local
	_ "github.com/benchflow/benchflow/providers/nomad"  // nomad
	_ "github.com/benchflow/benchflow/providers/ssh"    // ssh
)
