// Package diag renders configuration diagnostics for people and machines.
//
// Write prints each diagnostic as
//
//	FILE:LINE,COL: Summary
//	  Detail sentence.
//	    12 |   conections = 10
//	       |   ^^^^^^^^^^
//
// and WriteJSON prints the same as a JSON array. Front ends (engine/hclconf,
// engine/starconf) and engine/plan produce the hcl.Diagnostics; the CLI
// renders them with this package.
package diag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Sources maps file names (as in diagnostic ranges) to their bytes, to quote
// the offending line.
type Sources map[string][]byte

// Write prints diagnostics, errors and warnings, in order.
func Write(w io.Writer, diags hcl.Diagnostics, src Sources) {
	for _, d := range diags {
		sev := ""
		if d.Severity == hcl.DiagWarning {
			sev = "Warning: "
		}
		if d.Subject != nil {
			fmt.Fprintf(w, "%s:%d,%d: %s%s\n", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, sev, d.Summary)
		} else {
			fmt.Fprintf(w, "%s%s\n", sev, d.Summary)
		}
		if d.Detail != "" {
			for _, line := range strings.Split(strings.TrimSpace(d.Detail), "\n") {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
		if d.Subject != nil {
			quote(w, d.Subject, src[d.Subject.Filename])
		}
	}
}

func quote(w io.Writer, r *hcl.Range, src []byte) {
	if src == nil || r.Start.Line < 1 {
		return
	}
	lines := bytes.Split(src, []byte("\n"))
	if r.Start.Line > len(lines) {
		return
	}
	line := strings.TrimRight(string(lines[r.Start.Line-1]), "\r")
	line = strings.ReplaceAll(line, "\t", " ")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	num := fmt.Sprint(r.Start.Line)
	fmt.Fprintf(w, "    %s | %s\n", num, line)
	start := r.Start.Column - 1
	if start < 0 || start > len(line) {
		return
	}
	end := len(line)
	if r.End.Line == r.Start.Line && r.End.Column-1 > start && r.End.Column-1 <= len(line) {
		end = r.End.Column - 1
	}
	if end <= start {
		end = start + 1
	}
	fmt.Fprintf(w, "    %s | %s%s\n", strings.Repeat(" ", len(num)), strings.Repeat(" ", start), strings.Repeat("^", end-start))
}

// JSONDiagnostic is the JSON form of one diagnostic.
type JSONDiagnostic struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *JSONRange `json:"range,omitempty"`
}

// JSONRange locates a diagnostic; lines and columns are 1-based.
type JSONRange struct {
	Filename    string `json:"filename"`
	StartLine   int    `json:"start_line"`
	StartColumn int    `json:"start_column"`
	EndLine     int    `json:"end_line"`
	EndColumn   int    `json:"end_column"`
}

// ToJSON converts diagnostics to their JSON form.
func ToJSON(diags hcl.Diagnostics) []JSONDiagnostic {
	out := []JSONDiagnostic{}
	for _, d := range diags {
		jd := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if d.Subject != nil {
			jd.Range = &JSONRange{Filename: d.Subject.Filename, StartLine: d.Subject.Start.Line,
				StartColumn: d.Subject.Start.Column, EndLine: d.Subject.End.Line, EndColumn: d.Subject.End.Column}
		}
		out = append(out, jd)
	}
	return out
}

// WriteJSON prints {"valid": bool, "diagnostics": […]}.
func WriteJSON(w io.Writer, diags hcl.Diagnostics) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Valid       bool             `json:"valid"`
		Diagnostics []JSONDiagnostic `json:"diagnostics"`
	}{!diags.HasErrors(), ToJSON(diags)})
}
