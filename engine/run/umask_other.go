//go:build !unix

package run

// privateUmask does nothing where there is no umask.
func privateUmask() (restore func()) { return func() {} }
