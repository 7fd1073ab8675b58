// Package caddytest runs a real Caddy (github.com/caddyserver/caddy/v2,
// built from the Go module proxy) for the load generator's tests: one
// port on loopback serving HTTP/1.1 and HTTP/2 over TLS and HTTP/3 over
// QUIC, with a certificate the test generates, so loads can verify it.
//
// Entry points:
//
//   - Binary(t) finds the Caddy binary (BENCHFLOW_CADDY, then the build
//     cache, then PATH). Without one the test skips saying how to build
//     it, except under CI=true, where it fails: CI must have Caddy.
//   - Start(t) starts Caddy with a generated Caddyfile and stops it by pid
//     when the test ends (t.Cleanup); the returned *Server names its URL,
//     its CA file and its bodies, and reads Caddy's access log
//     (Server.Access) to tell which protocol each request came over.
//
// Build Caddy with engine/load/testdata/caddy/build.sh (or `make caddy`).
// The package is test support: only _test.go files import it.
package caddytest
