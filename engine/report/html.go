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
func WriteHTML(w io.Writer, s *Summary) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	fmt.Fprintf(&b, "<title>benchflow report %s</title>\n", html.EscapeString(s.RunID))
	b.WriteString(`<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:12px 0}th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
td.w{white-space:normal;min-width:12em;max-width:24em;text-align:left}
th{background:#f4f4f4}td.p,th.p{text-align:left}
svg.chart{display:block;margin:18px 0;font-size:12px}
svg .title{font-weight:600;font-size:14px}svg .grid{stroke:#e5e5e5}svg .tick,svg .axis{fill:#555}
svg .series{fill:none;stroke-width:1.8}svg .band{opacity:.18;stroke:none}svg .ci{stroke:#222;stroke-width:1.4;fill:none}
svg .legend,svg .cell{cursor:pointer}svg .off{opacity:.15}
.warn{color:#a33}.note{color:#555;font-size:12px;margin:2px 0}
</style>
</head><body>
`)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%s</p>\n", html.EscapeString(s.Pipeline), html.EscapeString(s.title()))
	for _, m := range s.Notices {
		fmt.Fprintf(&b, "<p class=\"warn\">warning: %s</p>\n", html.EscapeString(m))
	}
	header, rows := s.table()
	b.WriteString("<div class=\"scroll\"><table><thead><tr>")
	for i, h := range header {
		cls := ""
		if i < len(s.Axes) || h == "step" || h == "verdict" || strings.HasPrefix(h, "top processes") {
			cls = ` class="p"`
		}
		fmt.Fprintf(&b, "<th%s>%s</th>", cls, html.EscapeString(h))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for i, c := range r {
			cls := ""
			switch {
			case header[i] == "flags" || header[i] == "verdict" || strings.HasPrefix(header[i], "top processes"):
				cls = ` class="w"`
				if header[i] == "flags" && c != "-" {
					cls = ` class="w warn"`
				}
			case i < len(s.Axes) || header[i] == "step":
				cls = ` class="p"`
			}
			fmt.Fprintf(&b, "<td%s>%s</td>", cls, html.EscapeString(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
	for _, n := range s.methodNote() {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", html.EscapeString(n))
	}
	for _, m := range s.Warnings {
		fmt.Fprintf(&b, "<p class=\"warn\">warning: %s</p>\n", html.EscapeString(m))
	}
	for _, ch := range charts(s) {
		b.WriteString(ch.svg())
		b.WriteString("\n")
	}
	if svg := cpuChartSVG(s); svg != "" {
		b.WriteString(svg + "\n")
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
