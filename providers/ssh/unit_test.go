package ssh

import (
	"os/exec"
	"testing"

	"github.com/benchflow/benchflow/providers"
)

// TestOwnerString: the controller's identity survives the trip through
// the helper's command line.
func TestOwnerString(t *testing.T) {
	o := providers.Owner{Host: "lab host/1", PID: 42, Start: 12345, Boot: "abc"}
	got, ok := parseOwner(ownerString(o))
	if !ok || got.PID != 42 || got.Start != 12345 || got.Boot != "abc" || got.Host != "lab_host_1" {
		t.Errorf("parseOwner(ownerString(%+v)) = %+v, %v", o, got, ok)
	}
	for _, bad := range []string{"", "a/b/c", "h/x/1/b", "h/1/x/b"} {
		if _, ok := parseOwner(bad); ok {
			t.Errorf("parseOwner(%q) accepted", bad)
		}
	}
}

// TestShellQuote: what a POSIX shell reads back is the string itself.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"/home/a b/.cache", "it's", `$(x) ; "y" \z`, ""} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh read %q back as %q (%v)", s, out, err)
		}
	}
}
