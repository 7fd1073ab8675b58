//go:build unix

package run

import "syscall"

// privateUmask makes every file and folder the process creates from now
// on its owner's only (umask 077: 0600 files, 0700 folders) — logs of
// services and steps, rendered files, results — and returns the function
// that restores the previous mask.
func privateUmask() (restore func()) {
	old := syscall.Umask(0o077)
	return func() { syscall.Umask(old) }
}
