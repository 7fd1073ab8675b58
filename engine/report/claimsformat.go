package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/stats"
)

// ClaimCounts is "1 holds, 1 fails, 1 inconclusive" ("" without claims).
func ClaimCounts(outs []ClaimOutcome) string {
	return (&Summary{Claims: outs}).claimCounts()
}

// claimHeader and claimRow are the claims table of text and markdown.
var claimHeader = []string{"claim", "outcome", "judged", "estimate [95% CI]", "bound", "n"}

func (o ClaimOutcome) row() []string {
	est := stats.Interval{Value: o.Estimate, Low: o.Low, High: o.High, Method: o.Method, N: o.N}
	return []string{o.Name, o.Outcome, claims.Subject(o.Kind, o.Metric, o.VersusMetric, o.Cell, o.Versus),
		claims.EstimateLabel(o.Kind, o.unit, est), o.Bound, fmt.Sprint(o.N)}
}

// WriteClaims prints outcomes as the text report does (for commands
// that show claims without the cells, such as reproduce).
func WriteClaims(w io.Writer, outs []ClaimOutcome) error {
	return (&Summary{Claims: outs}).writeClaimsText(w)
}

func (s *Summary) writeClaimsText(w io.Writer) error {
	if len(s.Claims) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nclaims: %s\n", s.claimCounts())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(claimHeader, "\t"))
	for _, o := range s.Claims {
		fmt.Fprintln(tw, strings.Join(o.row(), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range s.Claims {
		fmt.Fprintf(w, "  %s (%s): %s\n", o.Name, o.Outcome, o.Detail)
		if o.Description != "" {
			fmt.Fprintf(w, "    %s\n", o.Description)
		}
	}
	return nil
}

func (s *Summary) writeClaimsMarkdown(w io.Writer) {
	if len(s.Claims) == 0 {
		return
	}
	fmt.Fprintf(w, "\n**Claims: %s**\n\n", s.claimCounts())
	writeMDRow(w, append(append([]string(nil), claimHeader...), "detail"))
	writeMDRow(w, []string{"---", "---", "---", "---:", "---", "---:", "---"})
	for _, o := range s.Claims {
		d := o.Detail
		if o.Description != "" {
			d = o.Description + ". " + d
		}
		writeMDRow(w, append(o.row(), d))
	}
}

// claimChart is the chart of the HTML page that shows a claim's metric:
// "rps", "latency", "capacity", "cpu", or "" (shown under the table).
func claimChart(o ClaimOutcome) string {
	switch {
	case o.Kind == claims.KindVerdict || strings.HasPrefix(o.Metric, "cpu_"):
		return "cpu"
	case o.Metric == "rps":
		return "rps"
	case o.Metric == "capacity_rps":
		return "capacity"
	case strings.HasPrefix(o.Metric, "latency_") || o.Metric == "connect_p50_us":
		return "latency"
	}
	return ""
}

// claimsHTML is the table of the claims shown next to chart ("" for those
// without a chart); the chart ids present on the page are in charts.
func (s *Summary) claimsHTML(chart string, charts map[string]bool) string {
	var b strings.Builder
	for _, o := range s.Claims {
		c := claimChart(o)
		if !charts[c] {
			c = ""
		}
		if c != chart {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "<table class=\"claims\" data-chart=\"%s\"><thead><tr>", html.EscapeString(chart))
			for _, h := range append(append([]string(nil), claimHeader...), "detail") {
				fmt.Fprintf(&b, "<th class=\"p\">%s</th>", html.EscapeString(h))
			}
			b.WriteString("</tr></thead><tbody>\n")
		}
		fmt.Fprintf(&b, "<tr id=\"claim-%s\" data-outcome=\"%s\">", html.EscapeString(o.Name), html.EscapeString(o.Outcome))
		for i, c := range o.row() {
			cls := "p"
			if i == 1 {
				cls = "p " + o.Outcome // coloured by the page's .holds, .fails, .inconclusive
			}
			fmt.Fprintf(&b, "<td class=\"%s\">%s</td>", cls, html.EscapeString(c))
		}
		d := o.Detail
		if o.Description != "" {
			d = o.Description + ". " + d
		}
		fmt.Fprintf(&b, "<td class=\"w\">%s</td></tr>\n", html.EscapeString(d))
	}
	if b.Len() > 0 {
		b.WriteString("</tbody></table>\n")
	}
	return b.String()
}
