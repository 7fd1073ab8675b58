package diag

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestErr(t *testing.T) {
	at := &hcl.Range{Filename: "p.hcl", Start: hcl.Pos{Line: 3, Column: 7}}
	if err := Err(hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "Only a warning"}}); err != nil {
		t.Errorf("warnings only: %v, want nil", err)
	}
	if err := Err(nil); err != nil {
		t.Errorf("no diagnostics: %v, want nil", err)
	}
	err := Err(hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Unknown variable", Detail: "There is no variable named \"x\".", Subject: at},
		{Severity: hcl.DiagWarning, Summary: "ignored"},
		{Severity: hcl.DiagError, Summary: "No detail"},
	})
	// The second error has no detail: no dangling ": " after its summary.
	want := `p.hcl:3,7: Unknown variable: There is no variable named "x"; No detail`
	if err == nil || err.Error() != want {
		t.Errorf("Err = %v\nwant %s", err, want)
	}
}
