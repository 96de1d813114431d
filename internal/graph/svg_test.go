package graph

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/workflow"
)

// svgDoc is what checkSVG reads back from a drawing.
type svgDoc struct {
	steps  map[string]int    // data-step: how many groups
	status map[string]string // data-step: data-status
	href   map[string]string // data-step: the link inside, if any
	nodes  map[string]bool   // data-node
	edges  [][2]string       // data-from, data-to
}

// parseSVG reads a drawing as XML: it must parse, have an svg root with a
// size, and no script or external reference.
func parseSVG(data []byte) (*svgDoc, error) {
	doc := &svgDoc{steps: map[string]int{}, status: map[string]string{}, href: map[string]string{}, nodes: map[string]bool{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var open []string // data-step of the enclosing step groups
	depth, root := 0, ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			a := map[string]string{}
			for _, at := range t.Attr {
				a[at.Name.Local] = at.Value
			}
			if depth == 1 {
				root = t.Name.Local
				if a["width"] == "" || a["viewBox"] == "" {
					return nil, fmt.Errorf("the svg has no size: %v", t.Attr)
				}
			}
			switch t.Name.Local {
			case "script", "foreignObject", "image", "iframe":
				return nil, fmt.Errorf("a %s element", t.Name.Local)
			}
			for k, v := range a {
				if strings.HasPrefix(k, "on") {
					return nil, fmt.Errorf("an event handler %s", k)
				}
				if (k == "href" && !strings.HasPrefix(v, "#") && t.Name.Local != "a") || strings.Contains(v, "url(") && !strings.HasPrefix(v, "url(#") {
					return nil, fmt.Errorf("an external reference %s=%q", k, v)
				}
			}
			step, isStep := a["data-step"]
			if isStep {
				doc.steps[step]++
				doc.status[step] = a["data-status"]
				if !strings.Contains(" "+a["class"]+" ", " status-"+a["data-status"]+" ") || !strings.HasPrefix(a["class"], "step ") {
					return nil, fmt.Errorf("step %q: class %q does not match status %q", step, a["class"], a["data-status"])
				}
			}
			if t.Name.Local == "a" && len(open) > 0 {
				doc.href[open[len(open)-1]] = a["href"]
			}
			if t.Name.Local == "g" {
				open = append(open, step)
			}
			if n, ok := a["data-node"]; ok {
				if doc.nodes[n] {
					return nil, fmt.Errorf("node %q drawn twice", n)
				}
				doc.nodes[n] = true
			}
			if f, ok := a["data-from"]; ok {
				doc.edges = append(doc.edges, [2]string{f, a["data-to"]})
			}
		case xml.EndElement:
			depth--
			if t.Name.Local == "g" {
				open = open[:len(open)-1]
			}
		}
	}
	if root != "svg" {
		return nil, fmt.Errorf("the root is %q, not svg", root)
	}
	for _, e := range doc.edges {
		if !doc.nodes[e[0]] || !doc.nodes[e[1]] {
			return nil, fmt.Errorf("edge %s → %s: an end is not drawn", e[0], e[1])
		}
	}
	return doc, nil
}

// fataler is what checkDrawing needs of testing.T and rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// checkDrawing draws w and checks what any valid workflow's drawing must
// be: XML with every step exactly once, every edge between drawn nodes,
// no two boxes overlapping, the same bytes every time.
func checkDrawing(t fataler, w *workflow.Workflow, o SVGOptions) []byte {
	t.Helper()
	out, err := SVG(w, o)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseSVG(out)
	if err != nil {
		t.Fatalf("malformed drawing: %v\n%s", err, out)
	}
	steps := workflow.Flatten(w.Steps)
	for _, s := range steps {
		if doc.steps[s.ID] != 1 {
			t.Fatalf("step %q drawn %d times", s.ID, doc.steps[s.ID])
		}
	}
	if len(doc.steps) != len(steps) {
		t.Fatalf("%d steps drawn, the workflow has %d", len(doc.steps), len(steps))
	}
	if again, _ := SVG(w, o); !bytes.Equal(again, out) {
		t.Fatal("two drawings of one workflow differ")
	}
	if err := overlaps(build(w)); err != nil {
		t.Fatal(err)
	}
	return out
}

// overlaps lays d out and reports two boxes of one cluster that overlap,
// or a box that sticks out of its cluster.
func overlaps(d *diagram) error {
	root, _ := layout(d)
	var check func(c *box) error
	check = func(c *box) error {
		for i, a := range c.children {
			if c.parent != nil && (a.x < c.x || a.y < c.y || a.x+a.w > c.x+c.w || a.y+a.h > c.y+c.h) {
				return fmt.Errorf("%s sticks out of %s", a.id, c.id)
			}
			if a.w <= 0 || a.h <= 0 {
				return fmt.Errorf("%s has no size", a.id)
			}
			for _, b := range c.children[i+1:] {
				if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
					return fmt.Errorf("%s and %s overlap: %+v %+v", a.id, b.id, *a, *b)
				}
			}
			if err := check(a); err != nil {
				return err
			}
		}
		return nil
	}
	return check(root)
}

// TestSVGGolden draws every example and edge case and compares it with
// testdata/.../NAME.svg (rewritten with -update).
func TestSVGGolden(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	jsonFiles, _ := filepath.Glob("../../examples/*.json")
	cases, _ := filepath.Glob("testdata/cases/*.yaml")
	if len(files)+len(jsonFiles) < 8 || len(cases) < 4 {
		t.Fatalf("too few examples (%d) or cases (%d)", len(files)+len(jsonFiles), len(cases))
	}
	want := map[string]bool{}
	for _, f := range append(append(files, jsonFiles...), cases...) {
		golden := filepath.Join("testdata", "examples", stem(f)+".svg")
		if strings.HasPrefix(f, "testdata") {
			golden = strings.TrimSuffix(f, ".yaml") + ".svg"
		}
		want[golden] = true
		t.Run(stem(f), func(t *testing.T) {
			compareSVG(t, checkDrawing(t, loadValid(t, f), SVGOptions{}), golden)
		})
	}
	t.Run("unsafe-ids", func(t *testing.T) {
		compareSVG(t, checkDrawing(t, unsafeIDs(), SVGOptions{}), "testdata/cases/unsafe-ids.svg")
	})
	want["testdata/cases/unsafe-ids.svg"] = true
	// With statuses and links: how a run's page shows it.
	t.Run("review-loop-run", func(t *testing.T) {
		o := SVGOptions{
			Status: map[string]string{"draft": "succeeded", "read": "succeeded", "review": "failed", "verdict": "skipped", "revise": "running", "again": "waiting", "publish": "pending"},
			Link:   func(id string) string { return "/runs/r1/steps/" + id },
		}
		compareSVG(t, checkDrawing(t, loadValid(t, "testdata/cases/review-loop.yaml"), o), "testdata/cases/review-loop-run.svg")
	})
	want["testdata/cases/review-loop-run.svg"] = true
	have, _ := filepath.Glob("testdata/*/*.svg")
	for _, g := range have {
		if !want[g] && !*update {
			t.Errorf("%s has no workflow", g)
		}
	}
}

func compareSVG(t *testing.T, got []byte, golden string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./graph -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("drawing differs from %s (go test ./graph -run Golden -update rewrites it)", golden)
	}
}

// TestSVGStatusAndLinks: statuses land on their steps (unknown ones
// drawn neutral), links are kept unless they could run, and the text is
// escaped.
func TestSVGStatusAndLinks(t *testing.T) {
	msg := `<stop> & "go"`
	w := &workflow.Workflow{Version: 1, Name: "s", Steps: []*workflow.Step{
		{ID: "a", Uses: "log", Title: `<script>alert(1)</script>`},
		{ID: "b", Parallel: []*workflow.Step{{ID: "c", Uses: "log"}, {ID: "d", Uses: "log"}}},
		{ID: "e", Fail: &msg},
	}}
	links := map[string]string{"a": "/runs/1#a", "b": "javascript:alert(1)", "c": "https://example.com/c?x=1&y=2", "d": ""}
	out := checkDrawing(t, w, SVGOptions{
		Status: map[string]string{"a": "succeeded", "b": "running", "c": "bogus", "e": "failed"},
		Link:   func(id string) string { return links[id] },
	})
	doc, _ := parseSVG(out)
	for id, want := range map[string]string{"a": "succeeded", "b": "running", "c": "none", "d": "none", "e": "failed"} {
		if doc.status[id] != want {
			t.Errorf("step %s: status %q, want %q", id, doc.status[id], want)
		}
	}
	for id, want := range map[string]string{"a": "/runs/1#a", "b": "", "c": "https://example.com/c?x=1&y=2", "d": "", "e": ""} {
		if doc.href[id] != want {
			t.Errorf("step %s: link %q, want %q", id, doc.href[id], want)
		}
	}
	if bytes.Contains(out, []byte("<script")) {
		t.Error("a title's markup came through unescaped")
	}
	if _, err := SVG(nil, SVGOptions{}); !errors.Is(err, ErrNoWorkflow) {
		t.Errorf("SVG(nil) = %v, want ErrNoWorkflow", err)
	}
}

// TestSVGProperty: any valid workflow draws as well-formed XML, each step
// once, no boxes overlapping.
func TestSVGProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := genDocument(t)
		res := workflow.Check(data, workflow.Options{})
		if !res.Valid() {
			t.Fatalf("the generator drew an invalid workflow: %v\n%s", res.Violations, data)
		}
		checkDrawing(t, res.Workflow, SVGOptions{})
	})
}

// TestSVGRendersInChromium has Chromium draw a drawing with statuses:
// the screenshot is not blank and shows the succeeded and failed colours.
func TestSVGRendersInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	w := loadValid(t, "testdata/cases/review-loop.yaml")
	out, err := SVG(w, SVGOptions{Status: map[string]string{"draft": "succeeded", "review": "failed"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file, shot := filepath.Join(dir, "g.svg"), filepath.Join(dir, "g.png")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu",
		"--hide-scrollbars", "--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=600,700", "--screenshot="+shot, "file://"+file)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, msg)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours := map[[3]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
		}
	}
	white := colours[[3]uint32{255, 255, 255}]
	if total := b.Dx() * b.Dy(); white > total*98/100 {
		t.Fatalf("the screenshot is blank: %d of %d pixels white", white, total)
	}
	for name, c := range map[string][3]uint32{"succeeded fill": {0xda, 0xfb, 0xe1}, "failed fill": {0xff, 0xeb, 0xe9}} {
		if colours[c] < 100 {
			t.Errorf("%s %v: %d pixels, want a box of it", name, c, colours[c])
		}
	}
}

// bigWorkflow is a workflow of about n steps of every structure: runs of
// steps, ifs, parallel groups, foreach loops and switch loops.
func bigWorkflow(n int) *workflow.Workflow {
	w := &workflow.Workflow{Version: 1, Name: "big"}
	msg := "stop"
	for i := 0; len(workflow.Flatten(w.Steps)) < n; i++ {
		id := "s" + strconv.Itoa(i)
		switch i % 6 {
		case 0, 1:
			w.Steps = append(w.Steps, &workflow.Step{ID: id, Uses: "log", Title: "a step with a title of some length"})
		case 2:
			w.Steps = append(w.Steps, &workflow.Step{ID: id, Uses: "log", If: workflow.Cond("${{ inputs.x > " + strconv.Itoa(i) + " }}")})
		case 3:
			w.Steps = append(w.Steps, &workflow.Step{ID: id, Parallel: []*workflow.Step{
				{ID: id + "a", Uses: "log"}, {ID: id + "b", Uses: "http"}, {ID: id + "c", Fail: &msg, If: "false"}}})
		case 4:
			w.Steps = append(w.Steps, &workflow.Step{ID: id, Foreach: "${{ [1, 2] }}", Steps: []*workflow.Step{
				{ID: id + "x", Uses: "log"}, {ID: id + "y", Uses: "log"}}})
		case 5:
			w.Steps = append(w.Steps, &workflow.Step{ID: id, MaxVisits: 3, Switch: []*workflow.Case{{If: "${{ false }}", Goto: "s" + strconv.Itoa(i-5)}}})
		}
	}
	return w
}

func TestSVGBig(t *testing.T) {
	checkDrawing(t, bigWorkflow(600), SVGOptions{})
}

// BenchmarkSVG draws a workflow of 3,000 steps; size is reported.
func BenchmarkSVG(b *testing.B) {
	w := bigWorkflow(3000)
	var size int
	for b.Loop() {
		out, err := SVG(w, SVGOptions{})
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "bytes")
}

// BenchmarkSVGWide draws a parallel group of 2,000 branches: the layout's
// worst case, every box side by side.
func BenchmarkSVGWide(b *testing.B) {
	w := &workflow.Workflow{Version: 1, Name: "wide"}
	group := &workflow.Step{ID: "all"}
	for i := range 2000 {
		group.Parallel = append(group.Parallel, &workflow.Step{ID: "b" + strconv.Itoa(i), Uses: "log"})
	}
	w.Steps = []*workflow.Step{{ID: "first", Uses: "log"}, group, {ID: "last", Uses: "log"}}
	var size int
	for b.Loop() {
		out, err := SVG(w, SVGOptions{})
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "bytes")
}
