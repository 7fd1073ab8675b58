// Package envinfo records the machine and software a run ran on: the
// "environment" object of manifest.json.
//
// Entry points:
//
//   - Collect reads the kernel, distribution, CPU, memory, CPU frequency
//     governor, transparent huge pages, networking sysctls, Go and
//     benchflow versions (with the git commit) and the versions of wrk,
//     nginx, apache2 and Docker. Every probe is optional and time-bounded;
//     Collect never fails.
//   - Environment.Fingerprint is a sha256 over the fields that identify
//     the machine and its configuration (not the hostname, not the time,
//     not tool versions); `benchflow compare` warns when two runs differ.
//     Diff lists which of those fields differ.
//   - ServiceVersion runs a service's version_command (e.g. nginx -V).
//   - Environment.Map / FromMap convert to and from the map stored in
//     results.Manifest.Environment.
//
// Sibling packages: engine/results writes manifest.json, engine/run (the
// executor) calls Collect once per run and ServiceVersion once per
// service, engine/report and the compare command read the fingerprint.
package envinfo
