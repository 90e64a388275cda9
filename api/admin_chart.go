package api

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/askwp/askwpd/store"
)

// Small inline SVG charts for the admin page: no script, no external
// asset. They are built from numbers; the only text, tool names and
// bucket labels, is escaped.

const (
	chartW = 320
	chartH = 110
	padL   = 34
	padB   = 16
	padT   = 8
)

func svgOpen(b *strings.Builder, label string) {
	fmt.Fprintf(b, `<svg viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, template.HTMLEscapeString(label))
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999" stroke-width="0.5"/>`, padL, chartH-padB, chartW, chartH-padB)
}

func axisLabel(b *strings.Builder, top string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="9" text-anchor="end" fill="#555">%s</text>`, padL-3, padT+8, template.HTMLEscapeString(top))
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="9" text-anchor="end" fill="#555">0</text>`, padL-3, chartH-padB)
}

func emptyChart(label, msg string) template.HTML {
	var b strings.Builder
	svgOpen(&b, label)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#777">%s</text></svg>`,
		(chartW+padL)/2, chartH/2, template.HTMLEscapeString(msg))
	return template.HTML(b.String())
}

// latencyChart draws the latest tool calls' latencies as bars.
func latencyChart(pts []LatencyPoint) template.HTML {
	if len(pts) == 0 {
		return emptyChart("tool latency", "no tool calls yet")
	}
	top := 1.0
	for _, p := range pts {
		top = max(top, p.Ms)
	}
	var b strings.Builder
	svgOpen(&b, "latency of the latest tool calls")
	axisLabel(&b, fmt.Sprintf("%.0f ms", top))
	w := float64(chartW-padL) / float64(len(pts))
	for i, p := range pts {
		h := p.Ms / top * float64(chartH-padB-padT)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#3b6ea5"><title>%s %.1f ms</title></rect>`,
			float64(padL)+float64(i)*w+0.5, float64(chartH-padB)-h, max(w-1, 0.5), max(h, 0.5),
			template.HTMLEscapeString(p.Tool), p.Ms)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// growthChart draws the number of indexed documents over time.
func growthChart(samples []store.StatsSample) template.HTML {
	if len(samples) == 0 {
		return emptyChart("index growth", "no samples yet")
	}
	top := 1
	for _, s := range samples {
		top = max(top, s.Documents)
	}
	var b strings.Builder
	svgOpen(&b, "indexed documents over time")
	axisLabel(&b, fmt.Sprint(top))
	span := samples[len(samples)-1].At.Sub(samples[0].At).Seconds()
	var pts []string
	for i, s := range samples {
		x := float64(padL)
		switch {
		case span > 0:
			x += s.At.Sub(samples[0].At).Seconds() / span * float64(chartW-padL-4)
		case len(samples) > 1:
			x += float64(i) / float64(len(samples)-1) * float64(chartW-padL-4)
		}
		y := float64(chartH-padB) - float64(s.Documents)/float64(top)*float64(chartH-padB-padT)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="#2f7d4f"><title>%s: %d documents</title></circle>`,
			x, y, s.At.UTC().Format("2006-01-02 15:04"), s.Documents)
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#2f7d4f" stroke-width="1.5"/>`, strings.Join(pts, " "))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9" fill="#555">%s</text>`, padL, chartH-3, samples[0].At.UTC().Format("Jan 2 15:04"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9" text-anchor="end" fill="#555">%s</text></svg>`, chartW, chartH-3,
		samples[len(samples)-1].At.UTC().Format("Jan 2 15:04"))
	return template.HTML(b.String())
}

// freshnessChart draws how many documents were fetched within each age.
func freshnessChart(buckets []store.AgeBucket) template.HTML {
	if len(buckets) == 0 {
		return emptyChart("freshness", "no documents yet")
	}
	top := 1
	for _, a := range buckets {
		top = max(top, a.Documents)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %d %d" width="100%%" role="img" aria-label="documents by time since fetch" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH)
	row := float64(chartH-4) / float64(len(buckets))
	for i, a := range buckets {
		y := 2 + float64(i)*row
		w := float64(a.Documents) / float64(top) * float64(chartW-70-30)
		fmt.Fprintf(&b, `<text x="66" y="%.1f" font-size="10" text-anchor="end" fill="#333">%s</text>`, y+row*0.7, template.HTMLEscapeString(a.Label))
		fmt.Fprintf(&b, `<rect x="70" y="%.1f" width="%.1f" height="%.1f" fill="#b5762a"/>`, y+1, max(w, 0.5), row-3)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#333">%d</text>`, 73+w, y+row*0.7, a.Documents)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
