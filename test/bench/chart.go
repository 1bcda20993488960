//go:build linux

package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// managerColors tell the managers apart on every plot of the chart.
var managerColors = map[string]color.Color{
	"upstream": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	"kcm":      color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	// Its replicas' CPU together and its largest replica's RSS (procs.Usage).
	groupsManager: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
}

// cpuWindow is the span over which the chart reads the manager's CPU use: /proc counts CPU
// time in hundredths of a second, too coarse for a rate over one 250 ms tick.
const cpuWindow = 1.0

// chartPath is where the chart of the result written to out goes: beside it, .svg.
func chartPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".svg"
}

// hasSeries reports whether any phase of any manager was sampled: a chart draws something.
func hasSeries(ms []*ManagerResult) bool {
	for _, m := range ms {
		for _, name := range phaseNames(m) {
			if len(phaseNamed(m, name).Series) > 0 {
				return true
			}
		}
	}
	return false
}

// writeChart draws the managers' phases (drawChart) into an SVG file.
func writeChart(path string, ms []*ManagerResult) error {
	if len(ms) == 0 {
		return fmt.Errorf("no managers to chart")
	}
	c := vgsvg.New(chartSize(ms))
	if err := drawChart(draw.New(c), ms); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// chartCols are the plots of a phase's row: progress, CPU, RSS.
const chartCols = 3

// chartSize is the chart's width and height: 4.5 by 3 inches a plot.
func chartSize(ms []*ManagerResult) (w, h vg.Length) {
	return chartCols * 4.5 * vg.Inch, vg.Length(len(phaseNames(ms[0]))) * 3 * vg.Inch
}

// drawChart draws the managers' phases, a row each: the phase's progress (ready pods, pods
// left), the manager's CPU use in cores and its RSS, over the seconds since the phase
// started, every manager on the same axes, each in its colour; a dashed line marks where
// each manager's phase converged.
func drawChart(dc draw.Canvas, ms []*ManagerResult) error {
	rows := phaseNames(ms[0])
	grid := make([][]*plot.Plot, len(rows))
	for i, name := range rows {
		row := phaseNamed(ms[0], name)
		progress, cpu, rss := phasePlot(name, row.Progress, "pods"), phasePlot(name, "manager CPU", "cores"), phasePlot(name, "manager RSS", "MiB")
		// Where each line's empty corner is: ready pods and RSS rise, pods left fall.
		progress.Legend.Top = row.Progress != readyPods
		cpu.Legend.Top = true
		top := 1.0
		converged := map[string]float64{}
		for _, m := range ms {
			p := phaseNamed(m, name)
			if p == nil || len(p.Series) == 0 {
				continue
			}
			progressXY, rssXY := make(plotter.XYs, len(p.Series)), make(plotter.XYs, len(p.Series))
			for j, pt := range p.Series {
				progressXY[j] = plotter.XY{X: pt.Seconds, Y: float64(pt.Progress)}
				rssXY[j] = plotter.XY{X: pt.Seconds, Y: mib(pt.RSSBytes)}
				top = max(top, float64(pt.Progress))
			}
			for _, l := range []struct {
				p   *plot.Plot
				xys plotter.XYs
			}{{progress, progressXY}, {cpu, cpuRate(p.Series, cpuWindow)}, {rss, rssXY}} {
				if err := addLine(l.p, m.Name, l.xys); err != nil {
					return err
				}
			}
			if p.Name != quietPhase && p.WallSeconds > 0 {
				converged[m.Name] = p.WallSeconds
			}
		}
		for _, m := range ms {
			if s, ok := converged[m.Name]; ok {
				if err := addConverged(progress, m.Name, s, top); err != nil {
					return err
				}
			}
		}
		// From the phase's start and from nothing: the first sample is a tick in, and a
		// difference reads as what it is.
		for _, p := range []*plot.Plot{progress, cpu, rss} {
			p.X.Min, p.Y.Min = 0, 0
		}
		grid[i] = []*plot.Plot{progress, cpu, rss}
	}
	tiles := draw.Tiles{Rows: len(rows), Cols: chartCols, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Centimeter / 2, PadBottom: vg.Centimeter / 2, PadLeft: vg.Centimeter / 2, PadRight: vg.Centimeter / 2}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j := range grid[i] {
			grid[i][j].Draw(canvases[i][j])
		}
	}
	return nil
}

// phasePlot is an empty plot of one measure of a phase.
func phasePlot(phase, measure, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = phase + ": " + measure
	p.X.Label.Text = "seconds since the phase started"
	p.Y.Label.Text = unit
	p.Add(plotter.NewGrid())
	return p
}

// addLine draws a manager's series in its colour, named in the legend.
func addLine(p *plot.Plot, manager string, xys plotter.XYs) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", p.Title.Text, manager, err)
	}
	l.Color = managerColors[manager]
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(manager, l)
	return nil
}

// addConverged marks, dashed in the manager's colour from 0 to top, when its phase converged.
func addConverged(p *plot.Plot, manager string, seconds, top float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: seconds, Y: 0}, {X: seconds, Y: top}})
	if err != nil {
		return err
	}
	l.Color = managerColors[manager]
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	return nil
}

// cpuRate is the manager's CPU use in cores at each point of the series, over the span from
// the newest earlier point at least window seconds before it (or the series' first point).
func cpuRate(series []Point, window float64) plotter.XYs {
	var out plotter.XYs
	j := 0
	for i := 1; i < len(series); i++ {
		for j+1 < i && series[i].Seconds-series[j+1].Seconds >= window {
			j++
		}
		if d := series[i].Seconds - series[j].Seconds; d > 0 {
			out = append(out, plotter.XY{X: series[i].Seconds, Y: (series[i].CPUSeconds - series[j].CPUSeconds) / d})
		}
	}
	return out
}
