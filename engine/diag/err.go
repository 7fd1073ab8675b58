package diag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Err turns the error diagnostics of diags into one error for a caller that
// returns an error rather than diagnostics (a template rendered while a
// trial runs, a function's argument): each is "FILE:LINE,COL: Summary:
// Detail" (the location when it has one, the detail's full stop dropped),
// joined by "; ". It is nil when diags has no error. Plan and run both use
// it, so a diagnostic reads the same whichever reports it.
func Err(diags hcl.Diagnostics) error {
	var parts []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		s := d.Summary
		if d.Subject != nil {
			s = fmt.Sprintf("%s:%d,%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, s)
		}
		if d.Detail != "" {
			s += ": " + strings.TrimSuffix(d.Detail, ".")
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New(strings.Join(parts, "; "))
}
