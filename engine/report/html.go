package report

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// WriteHTML writes the summary as one self-contained HTML page: the table
// and three inline SVG charts (req/s per cell with CI whiskers, latency by
// percentile on a "nines" axis, req/s over time). It references nothing
// outside the page: no network, no CDN. A small inline script lets a click
// on a legend entry or bar hide and show a cell's series.
func WriteHTML(w io.Writer, s *Summary) error { return WritePage(w, s, Page{}) }

// Page is what a published study's page adds around the report
// (engine/bundle fills it): the claims first, the environment and the
// commands that reproduce it after the charts.
type Page struct {
	// Claims lead the page: one row per claim with its outcome.
	Claims []PageClaim
	// Environment are label/value rows of the machine the run ran on.
	Environment [][2]string
	// Commands are shell commands that check and rerun the study.
	Commands []string
}

// PageClaim is one claim as a published page shows it.
type PageClaim struct {
	Name, Statement string
	Outcome         string // "holds", "fails", "inconclusive" (coloured), or other text
	Detail          string // the estimate, its interval, and what would decide it
}

// WritePage writes the report page of WriteHTML with p's sections. The
// table wraps instead of scrolling: every column, the verdict included,
// is visible at a laptop's width, and below 760 px each cell becomes a
// card of label: value lines.
func WritePage(w io.Writer, s *Summary, p Page) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>benchflow report %s</title>\n", html.EscapeString(s.RunID))
	b.WriteString(`<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;padding:0 16px;color:#222;max-width:1240px}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:22px 0 6px}
table{border-collapse:collapse;margin:12px 0;width:100%}
th,td{padding:3px 6px;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}
th{background:#f4f4f4;font-weight:600;font-size:13px}
td.n{white-space:nowrap}td.w{text-align:left;min-width:7em;font-size:13px}
td.v{text-align:left;min-width:11em;font-size:13px}
td.p,th.p{text-align:left}
table.kv td{text-align:left}table.kv td:first-child{color:#555;white-space:nowrap;width:14em}
.claims td,.claims th{text-align:left}.holds{color:#11692a;font-weight:600}.fails{color:#a31515;font-weight:600}.inconclusive{color:#8a5a00;font-weight:600}
svg.chart{display:block;margin:18px 0;font-size:12px;width:100%;height:auto}
svg .title{font-weight:600;font-size:14px}svg .grid{stroke:#e5e5e5}svg .tick,svg .axis{fill:#555}
svg .series{fill:none;stroke-width:1.8}svg .band{opacity:.18;stroke:none}svg .ci{stroke:#222;stroke-width:1.4;fill:none}
svg .legend,svg .cell{cursor:pointer}svg .off{opacity:.15}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12.5px}
.warn{color:#a33}.note{color:#555;font-size:12px;margin:2px 0}
@media (max-width:760px){
body{margin:8px auto;padding:0 8px}
table.cells,table.cells tbody,table.cells tr,table.cells td,table.claims,table.claims tbody,table.claims tr,table.claims td{display:block;width:auto}
table.cells thead,table.claims thead{display:none}
table.cells tr,table.claims tr{border:1px solid #ddd;border-radius:4px;margin:0 0 10px;padding:4px 6px}
table.cells td,table.claims td{border:0;text-align:left;padding:1px 0;white-space:normal;min-width:0}
table.cells td::before{content:attr(data-label) ": ";color:#666;font-weight:600}
table.kv td:first-child{width:auto;white-space:normal}
}
</style>
</head><body>
`)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%s</p>\n", html.EscapeString(s.Pipeline), html.EscapeString(s.title()))
	if len(p.Claims) > 0 {
		b.WriteString("<h2>Claims</h2>\n<table class=\"claims\"><thead><tr><th>claim</th><th>outcome</th><th>estimate</th></tr></thead><tbody>\n")
		for _, c := range p.Claims {
			fmt.Fprintf(&b, "<tr><td><b>%s</b><br>%s</td><td class=\"%s\">%s</td><td class=\"note\">%s</td></tr>\n",
				html.EscapeString(c.Name), html.EscapeString(c.Statement), html.EscapeString(c.Outcome), html.EscapeString(c.Outcome), html.EscapeString(c.Detail))
		}
		b.WriteString("</tbody></table>\n")
	}
	for _, m := range s.Notices {
		fmt.Fprintf(&b, "<p class=\"warn\">warning: %s</p>\n", html.EscapeString(m))
	}
	chs := charts(s)
	cpuSVG := cpuChartSVG(s)
	shown := map[string]bool{"cpu": cpuSVG != ""}
	for _, ch := range chs {
		shown[ch.ID] = true
	}
	if len(s.Claims) > 0 && len(p.Claims) == 0 {
		fmt.Fprintf(&b, "<p class=\"claims-summary\">claims: %s", html.EscapeString(s.claimCounts()))
		for _, o := range s.Claims {
			fmt.Fprintf(&b, " · <a href=\"#claim-%s\">%s</a> %s", html.EscapeString(o.Name), html.EscapeString(o.Name), html.EscapeString(o.Outcome))
		}
		b.WriteString("</p>\n")
	}
	if len(p.Claims) > 0 || len(p.Environment) > 0 {
		b.WriteString("<h2>Results per cell</h2>\n")
	}
	header, rows := s.table()
	b.WriteString("<table class=\"cells\"><thead><tr>")
	for i, h := range header {
		cls := ""
		if i < len(s.Axes) || h == "step" || h == "verdict" || h == "flags" || strings.HasPrefix(h, "top processes") {
			cls = ` class="p"`
		}
		fmt.Fprintf(&b, "<th%s>%s</th>", cls, html.EscapeString(h))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for i, c := range r {
			cls := ` class="n"`
			switch {
			case header[i] == "verdict":
				cls = ` class="v"`
			case header[i] == "flags" || strings.HasPrefix(header[i], "top processes"):
				cls = ` class="w"`
				if header[i] == "flags" && c != "-" {
					cls = ` class="w warn"`
				}
			case i < len(s.Axes) || header[i] == "step":
				cls = ` class="p"`
			}
			fmt.Fprintf(&b, "<td%s data-label=\"%s\">%s</td>", cls, html.EscapeString(header[i]), html.EscapeString(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
	if notes, _ := s.verdictNotes(); len(notes) > 0 {
		b.WriteString("<ol class=\"notes\">")
		for _, n := range notes {
			// The number is the list's: "[3] " is left out.
			if _, rest, ok := strings.Cut(n, "] "); ok {
				n = rest
			}
			fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(n))
		}
		b.WriteString("</ol>\n")
	}
	for _, n := range s.methodNote() {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", html.EscapeString(n))
	}
	for _, m := range s.Warnings {
		fmt.Fprintf(&b, "<p class=\"warn\">warning: %s</p>\n", html.EscapeString(m))
	}
	b.WriteString(s.claimsHTML("", shown))
	for _, ch := range chs {
		b.WriteString(ch.svg())
		b.WriteString("\n")
		b.WriteString(s.claimsHTML(ch.ID, shown))
	}
	if cpuSVG != "" {
		b.WriteString(cpuSVG + "\n")
		b.WriteString(s.claimsHTML("cpu", shown))
	}
	if len(p.Environment) > 0 {
		b.WriteString("<h2>Environment</h2>\n<table class=\"kv\"><tbody>\n")
		for _, r := range p.Environment {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td></tr>\n", html.EscapeString(r[0]), html.EscapeString(r[1]))
		}
		b.WriteString("</tbody></table>\n")
	}
	if len(p.Commands) > 0 {
		b.WriteString("<h2>Reproduce it</h2>\n<pre>")
		for _, c := range p.Commands {
			b.WriteString(html.EscapeString(c) + "\n")
		}
		b.WriteString("</pre>\n<p class=\"note\">REPRODUCE.md in the bundle explains each command; docs/publishing.md explains the verdict.</p>\n")
	}
	b.WriteString(`<script>
(function(){
  var charts=document.querySelectorAll("svg.chart");
  function toggle(i){
    document.querySelectorAll('[data-series="'+i+'"]').forEach(function(e){e.classList.toggle("off")});
  }
  document.querySelectorAll(".legend,.cell").forEach(function(e){
    e.addEventListener("click",function(){toggle(e.getAttribute("data-series"))});
  });
  document.documentElement.setAttribute("data-charts",String(charts.length));
})();
</script>
</body></html>
`)
	_, err := io.WriteString(w, b.String())
	return err
}
